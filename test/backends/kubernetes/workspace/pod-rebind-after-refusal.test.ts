// PodRebinder.afterRefusal: the re-read a refused workspace call makes (Sandbox, then its pod)
// against a scripted API, and the move it makes on the real transport's handle. Pinned: the
// request sequence (GETs only — nothing on this path writes to the cluster) and the handle.
import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import { PodRebinder } from '../../../../src/backends/kubernetes/pod-rebind.js'
import { AgentTransport } from '../../../../src/host/transport/agent-transport.js'
import { type Handler, scriptedApi, statusError } from '../scripted-api-port.js'

const SANDBOX_PATH = '/apis/agents.x-k8s.io/v1alpha1/namespaces/ns/sandboxes/namzu-ws-a'

function setup(handler: Handler) {
	const api = scriptedApi(handler)
	const transport = new AgentTransport({
		kind: 'tcp',
		host: 'namzu-ws-a.ns.svc.cluster.local',
		port: 8080,
		token: 'pod-a',
	})
	const moves: Array<{ previousUid: string; currentUid: string }> = []
	const rebinder = new PodRebinder({
		api: api.port,
		namespace: 'ns',
		podName: 'namzu-ws-a',
		port: 8080,
		token: 'pod-a',
		transport,
		addressOf: () => 'namzu-ws-a.ns.svc.cluster.local',
		onRebound: (move) => moves.push(move),
	})
	return { api, transport, rebinder, moves }
}

const sandbox = (uid: string, operatingMode = 'Running'): KubernetesObject => ({
	metadata: { name: 'namzu-ws-a', uid },
	spec: { operatingMode },
})
const pod = (uid: string): KubernetesObject => ({
	metadata: { name: 'namzu-ws-a', uid },
	status: { phase: 'Running' },
})

describe('PodRebinder.afterRefusal', () => {
	it('R15-1d46ef4-01/02/19: re-reads the Sandbox and its pod once (GETs only) and follows a replaced pod: new token, same Service address', async () => {
		const { api, transport, rebinder, moves } = setup((call) =>
			call.path === SANDBOX_PATH ? sandbox('sb-1') : pod('pod-b'),
		)
		const decision = await rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')
		expect(decision).toMatchObject({ kind: 'rebind', podUid: 'pod-b' })
		expect(api.log()).toEqual([`GET ${SANDBOX_PATH}`, 'GET /api/v1/namespaces/ns/pods/namzu-ws-a'])
		expect(transport.handle).toEqual({
			kind: 'tcp',
			host: 'namzu-ws-a.ns.svc.cluster.local',
			port: 8080,
			token: 'pod-b',
		})
		expect(rebinder.currentUid).toBe('pod-b')
		expect(moves).toEqual([{ previousUid: 'pod-a', currentUid: 'pod-b' }])
	})

	it('R15-1d46ef4-03: the same pod leaves the transport as it was', async () => {
		const { transport, rebinder, moves } = setup((call) =>
			call.path === SANDBOX_PATH ? sandbox('sb-1') : pod('pod-a'),
		)
		expect((await rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')).kind).toBe('unchanged')
		expect(transport.handle.kind === 'tcp' && transport.handle.token).toBe('pod-a')
		expect(moves).toEqual([])
	})

	it('R15-1d46ef4-04: another Sandbox uid, or none (404), is replaced: the pod is not even read', async () => {
		const other = setup(() => sandbox('sb-2'))
		expect(await other.rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')).toEqual({
			kind: 'replaced',
			observedSandboxUid: 'sb-2',
		})
		expect(other.api.log()).toEqual([`GET ${SANDBOX_PATH}`])
		const none = setup((call) => {
			throw statusError('GET', call.path, 404)
		})
		expect(await none.rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')).toEqual({ kind: 'replaced' })
		expect(none.moves).toEqual([])
	})

	it('R15-1d46ef4-18: a Sandbox another process suspended is a suspension, not a replacement', async () => {
		const { rebinder, moves } = setup(() => sandbox('sb-1', 'Suspended'))
		expect(await rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')).toEqual({ kind: 'suspended' })
		expect(moves).toEqual([])
	})

	it('a re-read that fails leaves the refusal standing', async () => {
		const { rebinder } = setup((call) => {
			throw statusError('GET', call.path, 500)
		})
		expect((await rebinder.afterRefusal(SANDBOX_PATH, 'sb-1')).kind).toBe('unchanged')
	})
})
