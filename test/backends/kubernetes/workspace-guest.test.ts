// The workspace's guest through the handle's gate, against a scripted API and REAL guest agents
// (scripted-workspace-api.ts): a pod replaced under an address that stays (the replacement's
// agent refuses the old token) is followed once; another object under the name is not; a
// suspension by another process is adopted; an unconfirmed cancellation (the command frozen, so
// the agent cannot confirm its kill) keeps the workspace and is diagnosed; a fenced agent is named.
// Every case pins what it wrote to the cluster: nothing.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import {
	createKubernetesWorkspace,
	type KubernetesWorkspaceDependencies,
} from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import {
	KubernetesAgentRetiringError,
	KubernetesAgentUnauthorizedError,
	KubernetesExecutionDetachedError,
	type KubernetesWorkspace,
	type KubernetesWorkspaceCancellationNotice,
	type KubernetesWorkspaceOptions,
	KubernetesWorkspaceReplacedError,
	KubernetesWorkspaceSuspendedError,
	RemoteCancellationUnknownError,
} from '../../../src/index.js'
import type { KubernetesGuestRestartEvent } from '../../../src/kubernetes-entry.js'
import { execUntilUnconfirmed, FENCE_AGENT_ENV } from '../../helpers/fenced-agent.js'
import { canFreeze } from '../../helpers/frozen-process.js'
import { rejectionError } from './error-chain.js'
import { podAddress, type ScriptedWorkspaceApi } from './scripted-workspace-api.js'
import { backend, workspaceApi } from './workspace-handle-fixture.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined)
})

async function open(
	api: ScriptedWorkspaceApi,
	options: Partial<KubernetesWorkspaceOptions> = {},
	dependencies: KubernetesWorkspaceDependencies = {},
): Promise<KubernetesWorkspace> {
	return createKubernetesWorkspace(
		backend(api),
		{ workspaceId: 'w1', ...options },
		{ api: api.port, rootDir: api.model.workspace ?? '/', ...dependencies },
	)
}

const writes = (api: ScriptedWorkspaceApi, from = 0) =>
	api.calls.slice(from).filter((call) => call.verb !== 'GET' && call.verb !== 'LIST')

/** The controller replaces the pod; its old address now reaches the replacement's agent. */
async function replacePodBehindSameAddress(api: ScriptedWorkspaceApi): Promise<string> {
	const oldIp = String(api.model.pod?.status?.podIP)
	await api.removePod()
	await api.startPod()
	const uid = String(api.model.pod?.metadata.uid)
	const guest = api.model.guests.get(uid)
	if (!guest) throw new Error('no replacement guest')
	const forwarder = await podAddress(oldIp, api.agentPort, guest.port)
	cleanups.unshift(() => new Promise((resolve) => forwarder.close(resolve)))
	return uid
}

describe('Kubernetes workspace: a call the guest refused as unauthorized', () => {
	it('R15-1d46ef4-01/02/05/08/19: re-reads the Sandbox once, follows the replaced pod, sends the call once more and tells pod-replaced — writing nothing', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const events: KubernetesGuestRestartEvent[] = []
		workspace.onGuestRestart((event) => events.push(event))
		const firstPod = workspace.identity.podUid
		await workspace.writeFile('before.txt', 'x')
		const before = api.calls.length
		const newPod = await replacePodBehindSameAddress(api)
		const result = await workspace.exec('/bin/sh', ['-c', 'echo hello from the replacement'])
		expect(result.stdout).toBe('hello from the replacement\n')
		expect(api.log().slice(before)).toEqual([
			'GET /apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-w1',
			'GET /api/v1/namespaces/ns/pods/namzu-ws-w1',
		])
		expect(writes(api, before)).toEqual([])
		expect(workspace.identity.podUid).toBe(newPod)
		expect(events).toHaveLength(1)
		expect(events[0]).toMatchObject({
			reason: 'pod-replaced',
			previous: { podUid: firstPod },
			current: { podUid: newPod },
		})
		expect(workspace.suspended).toBe(false)
	})

	it('R15-1d46ef4-06: every verb that cannot be rebound rejects with KubernetesAgentUnauthorizedError, never a bare Error', async () => {
		const api = await workspaceApi({
			intercept: (call, model) =>
				// The cluster keeps answering with the pod the handle already has: nothing to follow.
				call.path.includes('/pods/') ? model.pod : undefined,
		})
		const workspace = await open(api)
		// The pod's agent now answers another token: a foreign guest behind the same pod object.
		const stranger = await replacePodBehindSameAddress(api)
		const model = api.model
		const original = model.pod
		// The re-read shows the same pod uid the handle holds: the refusal stands.
		model.pod = { ...original, metadata: { ...original?.metadata, uid: workspace.identity.podUid } }
		const calls: Array<[string, () => Promise<unknown>]> = [
			['exec', () => workspace.exec('/bin/true')],
			['writeFile', () => workspace.writeFile('a.txt', 'x')],
			['readFile', () => workspace.readFile('a.txt')],
			['listFiles', () => workspace.listFiles('.')],
			['openTerminal', () => workspace.openTerminal({ size: { cols: 80, rows: 24 } })],
			['openTcpConnection', () => workspace.openTcpConnection({ port: 9 })],
		]
		for (const [operation, call] of calls) {
			const error = await rejectionError(call())
			expect(error, operation).toBeInstanceOf(KubernetesAgentUnauthorizedError)
			expect((error as KubernetesAgentUnauthorizedError).operation).toBe(operation)
			expect((error as Error).message).not.toContain(stranger)
		}
		expect(writes(api)).toEqual(writes(api).filter((call) => call.verb === 'POST'))
	})

	it('R15-1d46ef4-04/19: another Sandbox under the name → KubernetesWorkspaceReplacedError, no rebind, nothing written', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const firstPod = workspace.identity.podUid
		await replacePodBehindSameAddress(api)
		const model = api.model
		if (model.sandbox)
			model.sandbox = {
				...model.sandbox,
				metadata: { ...model.sandbox.metadata, uid: randomUUID() },
			}
		const before = api.calls.length
		const error = await rejectionError(workspace.readFile('before.txt'))
		expect(error).toBeInstanceOf(KubernetesWorkspaceReplacedError)
		expect((error as KubernetesWorkspaceReplacedError).observedSandboxUid).toBe(
			model.sandbox?.metadata.uid,
		)
		expect(api.log().slice(before)).toEqual([
			'GET /apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-w1',
		])
		expect(workspace.identity.podUid).toBe(firstPod)
	})

	it('R15-1d46ef4-18: a workspace another process suspended rejects with KubernetesWorkspaceSuspendedError, the handle adopts it, and resume() works', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await replacePodBehindSameAddress(api)
		const model = api.model
		if (model.sandbox) {
			model.sandbox = {
				...model.sandbox,
				spec: { ...model.sandbox.spec, operatingMode: 'Suspended' },
			}
		}
		const error = await rejectionError(workspace.exec('/bin/true'))
		expect(error).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect(workspace.suspended).toBe(true)
		expect(await rejectionError(workspace.readFile('x'))).toBeInstanceOf(
			KubernetesWorkspaceSuspendedError,
		)
		await workspace.resume()
		expect(workspace.suspended).toBe(false)
		expect((await workspace.exec('/bin/sh', ['-c', 'echo back'])).stdout).toBe('back\n')
	})
})

describe('Kubernetes workspace: identity and restart events', () => {
	it('R15-1d46ef4-07/10: identity names the Sandbox, the pod and the agent process; no event across its own suspend/resume', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const events: KubernetesGuestRestartEvent[] = []
		const unsubscribe = workspace.onGuestRestart((event) => events.push(event))
		await workspace.writeFile('a.txt', 'x')
		const identity = workspace.identity
		expect(identity.sandboxUid).toBe(api.model.sandbox?.metadata.uid)
		expect(identity.podUid).toBe(api.model.pod?.metadata.uid)
		expect(identity.guestBootId).toEqual(expect.any(String))
		expect(identity.volumeClaimUids).toEqual({})
		await workspace.suspend({ flush: false })
		await workspace.resume()
		await workspace.writeFile('b.txt', 'y')
		expect(workspace.identity.podUid).not.toBe(identity.podUid)
		expect(workspace.identity.guestBootId).not.toBe(identity.guestBootId)
		expect(events).toEqual([])
		unsubscribe()
	})

	it('R15-b3db254-17: listSessions() is empty after suspend/resume', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await workspace.startDetached({ sessionId: 'server', command: 'sleep', args: ['60'] })
		expect((await workspace.listSessions()).map((session) => session.sessionId)).toEqual(['server'])
		await workspace.suspend({ flush: false })
		await workspace.resume()
		expect(await workspace.listSessions()).toEqual([])
	})

	it('R15-b3db254-20: spawnDetached stays absent from the workspace', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		expect('spawnDetached' in workspace).toBe(false)
	})

	it('R15-e2024bc-02: a workspace has no setNetworkPolicy', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		expect('setNetworkPolicy' in workspace).toBe(false)
	})
})

describe('Kubernetes workspace: a detached execution', () => {
	const executionId = () => `exec_${randomUUID()}`
	const program = 'echo first; sleep 1; echo second'

	it('R15-260547f-01/06: a command detached from one handle is picked up by id from a second handle (adopted-running) with its output complete from the offset; nothing cancelled, nothing written', async () => {
		const api = await workspaceApi()
		const first = await open(api)
		const id = executionId()
		const detach = new AbortController()
		let seen = ''
		const detached = await rejectionError(
			first.exec('/bin/sh', ['-c', program], {
				executionId: id,
				detach: true,
				detachSignal: detach.signal,
				onOutput: (chunk) => {
					seen += chunk.data
					if (seen.includes('first')) detach.abort()
				},
			}),
		)
		expect(detached).toBeInstanceOf(KubernetesExecutionDetachedError)
		const offset = (detached as KubernetesExecutionDetachedError).outputOffset
		expect(offset).toBeGreaterThan(0)
		const before = api.calls.length
		const second = await open(api)
		expect(second.origin).toBe('adopted-running')
		let rest = ''
		const result = await second.attachExecution(id, {
			fromOffset: offset,
			onOutput: (chunk) => {
				rest += chunk.data
			},
		})
		expect(result.exitCode).toBe(0)
		expect(seen + rest).toBe('first\nsecond\n')
		// The second handle's POST is answered 409 (that is how it adopts); nothing else is written.
		expect(writes(api, before).map((call) => call.verb)).toEqual(['POST'])
	})

	it('R15-260547f-14: after a pod replacement the same executionId starts a fresh command', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const id = executionId()
		const counter = 'count=$(cat runs 2>/dev/null || echo 0); echo $((count + 1)) > runs; cat runs'
		expect((await workspace.exec('/bin/sh', ['-c', counter], { executionId: id })).stdout).toBe(
			'1\n',
		)
		// The guest still holds the record: the same id runs nothing again.
		expect((await workspace.exec('/bin/sh', ['-c', counter], { executionId: id })).stdout).toBe(
			'1\n',
		)
		await workspace.suspend({ flush: false })
		await workspace.resume()
		expect((await workspace.exec('/bin/sh', ['-c', counter], { executionId: id })).stdout).toBe(
			'2\n',
		)
	})
})

/** A real unconfirmable cancellation on `workspace` (fenced-agent.ts); the frozen command is thawed after. */
async function unconfirmedExec(workspace: KubernetesWorkspace): Promise<unknown> {
	const { error, frozen } = await execUntilUnconfirmed(workspace)
	if (frozen) cleanups.unshift(() => frozen.thaw())
	return error
}

describe.skipIf(!canFreeze)('Kubernetes workspace: an unconfirmed cancellation', () => {
	it("R15-f6bfb7d-10/11/13/14/15: keeps the workspace — { accepted: false, reason: 'workspace-kept' }, no patch, suspended false — and tells onCancellationUnconfirmed the agent is retiring", async () => {
		const api = await workspaceApi({ guestEnv: FENCE_AGENT_ENV })
		const notices: KubernetesWorkspaceCancellationNotice[] = []
		const workspace = await open(
			api,
			{ onCancellationUnconfirmed: (notice) => notices.push(notice) },
			{ execution: { cancelConfirmTimeoutMs: 1_500 } },
		)
		const before = api.calls.length
		const error = await unconfirmedExec(workspace)
		expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
		expect((error as RemoteCancellationUnknownError).retirement).toEqual({
			accepted: false,
			reason: 'workspace-kept',
		})
		expect(workspace.suspended).toBe(false)
		expect(writes(api, before)).toEqual([])
		expect(notices).toHaveLength(1)
		expect(notices[0]).toMatchObject({ error, agent: 'retiring', guest: 'same' })
		expect(notices[0]?.previous?.podUid).toBe(workspace.identity.podUid)
		// R15-f6bfb7d-16/17/18: the fenced agent is named on the next call; still nothing written.
		const next = await rejectionError(workspace.exec('/bin/true'))
		expect(next).toBeInstanceOf(KubernetesAgentRetiringError)
		expect((next as KubernetesAgentRetiringError).tier).toBe('workspace')
		expect((next as Error).message).toContain('suspend() then resume()')
		expect(workspace.suspended).toBe(false)
		expect(workspace.status).not.toBe('destroyed')
		expect(writes(api, before)).toEqual([])
		// R15-f6bfb7d-19: every op but healthz and cancel-execution meets the fence.
		expect(await rejectionError(workspace.readFile('x'))).toBeInstanceOf(
			KubernetesAgentRetiringError,
		)
		// suspend() then resume() replaces the pod, and the fence with it.
		await workspace.suspend({ flush: false })
		await workspace.resume()
		expect((await workspace.exec('/bin/sh', ['-c', 'echo fresh'])).stdout).toBe('fresh\n')
	})
})
