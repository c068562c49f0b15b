// What a failed acquire leaves behind, through the backend's own API client over a real loopback
// server (scripted-api-server.ts) for the fault shapes the harness's API server cannot produce on
// one verb alone: the create POST is sent once even on a 503; the cleanup DELETE goes out after
// the caller gave up and is bounded by its own short budget; and a DELETE answered 404 or 410
// counts as released, both in the create-path cleanup and in destroy().
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
	ACQUIRE_CLEANUP_TIMEOUT_MS,
	acquireTaskSandbox,
} from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import { createKubernetesClient } from '../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { apiPortOf } from '../../../src/backends/kubernetes/client-port.js'
import type { KubernetesApiPort } from '../../../src/backends/kubernetes/kubernetes-api-port.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesAcquireError, type KubernetesBackendConfig } from '../../../src/index.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { rejection } from './error-chain.js'
import { pendingClaim, pod, readyClaim } from './scripted-api-port.js'
import {
	type ScriptedAnswer,
	type ScriptedApiServer,
	type ScriptedRequest,
	startScriptedApiServer,
	statusBody,
} from './scripted-api-server.js'

const ns = 'sandboxes'
const claims = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`
/** The client's own per-request bound here: far above the cleanup budget. */
const API_REQUEST_TIMEOUT_MS = 60_000

const servers: ScriptedApiServer[] = []
const agents: GuestAgent[] = []
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.close()))
	await Promise.all(agents.splice(0).map((agent) => agent.stop()))
})

async function apiServer(
	script: (request: ScriptedRequest) => ScriptedAnswer,
): Promise<{ server: ScriptedApiServer; port: KubernetesApiPort }> {
	const server = await startScriptedApiServer(script)
	servers.push(server)
	const client = createKubernetesClient(
		{ server: server.server, getToken: () => 'token' },
		{ apiRequestTimeoutMs: API_REQUEST_TIMEOUT_MS },
	)
	return { server, port: apiPortOf(client) }
}

const config = (overrides: Partial<KubernetesBackendConfig> = {}) =>
	resolveKubernetesBackendConfig({
		tier: 'microvm',
		service: 'kubernetes',
		namespace: ns,
		access: { server: 'http://127.0.0.1:1', getToken: () => 'token' },
		sandboxTemplateName: 'task',
		warmPoolName: 'pool',
		readyPollIntervalMs: 5,
		readyTimeoutMs: 60_000,
		...overrides,
	})

/** The requests but the claim's readiness watch (opened beside the POST, closed when it fails). */
const besideTheWatch = (server: ScriptedApiServer): string[] =>
	server.requests.filter((line) => line !== `GET ${claims}`)

/** The name the acquire chose: the `metadata.name` of the claim it POSTed. */
const postedName = (body: unknown): string =>
	String((body as { metadata?: { name?: string } } | undefined)?.metadata?.name)

describe('the create POST', () => {
	it('is sent exactly once when the API server answers 503, and the name it chose is then deleted', async () => {
		let name = ''
		const { server, port } = await apiServer(({ method, body }) => {
			if (method === 'POST') {
				name = postedName(body)
				return { status: 503, body: statusBody(503, 'ServiceUnavailable') }
			}
			return { status: 200, body: {} }
		})
		const { error } = await rejection(acquireTaskSandbox({ api: port, config: config() }))
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'api-unreachable', retryable: true })
		expect(besideTheWatch(server)).toEqual([`POST ${claims}`, `DELETE ${claims}/${name}`])
	})
})

describe('the cleanup DELETE after a failed acquire', () => {
	it(
		'is still sent after the caller aborted, and ends on its own short budget rather than apiRequestTimeoutMs',
		async () => {
			const caller = new AbortController()
			const reason = new Error('the caller gave up')
			let name = ''
			let claimReads = 0
			let abortedAt = 0
			const { server, port } = await apiServer(({ method, body }) => {
				if (method === 'POST') {
					name = postedName(body)
					return { status: 201, body }
				}
				if (method === 'DELETE') return 'hang'
				claimReads++
				if (claimReads === 2) {
					abortedAt = performance.now()
					caller.abort(reason)
				}
				return { status: 200, body: pendingClaim() }
			})
			const { error } = await rejection(
				acquireTaskSandbox({ api: port, config: config() }, caller.signal),
			)
			const afterAbortMs = performance.now() - abortedAt
			console.info(`rejected ${Math.round(afterAbortMs)} ms after the caller's abort`)
			expect(error).toBe(reason)
			// The caller's signal was already aborted: the DELETE went out anyway, by name.
			expect(server.requests.at(-1)).toBe(`DELETE ${claims}/${name}`)
			// It waited on that unanswered DELETE for the cleanup budget, not for the client's bound.
			expect(afterAbortMs).toBeGreaterThanOrEqual(ACQUIRE_CLEANUP_TIMEOUT_MS - 100)
			expect(afterAbortMs).toBeLessThan(API_REQUEST_TIMEOUT_MS / 3)
			// And the client, not the server, ended it.
			await vi.waitFor(() => expect(server.abandoned).toEqual([`DELETE ${claims}/${name}`]))
		},
		API_REQUEST_TIMEOUT_MS,
	)
})

describe('an object already gone', () => {
	it.each([[404], [410]])(
		'counts a DELETE answered %i as released, in the create-path cleanup and in destroy()',
		async (status) => {
			const gone: ScriptedAnswer = { status, body: statusBody(status, 'NotFound') }

			// Create-path cleanup: the controller refuses the claim, the DELETE finds it gone already.
			const refused = await apiServer(({ method, body }) => {
				if (method === 'POST') return { status: 201, body }
				if (method === 'DELETE') return gone
				return { status: 200, body: pendingClaim('WarmPoolNotFound', 'no pool') }
			})
			const { error } = await rejection(acquireTaskSandbox({ api: refused.port, config: config() }))
			// The acquire's own refusal, not the DELETE's answer, and the DELETE is not repeated.
			expect(error).toMatchObject({ name: 'KubernetesAcquireError', reason: 'claim-rejected' })
			expect(besideTheWatch(refused.server).map((line) => line.split(' ')[0])).toEqual([
				'POST',
				'GET',
				'DELETE',
			])

			// Teardown: a live sandbox over the real agent, its claim gone by the time destroy() runs.
			const token = randomUUID()
			const agent = await startGuestAgent({ token })
			agents.push(agent)
			let name = ''
			const live = await apiServer(({ method, path, body }) => {
				if (method === 'POST') {
					name = postedName(body)
					return { status: 201, body }
				}
				if (method === 'DELETE') return gone
				if (path.includes('/sandboxclaims/')) return { status: 200, body: readyClaim('pool-gone') }
				return { status: 200, body: pod(token, '127.0.0.1') }
			})
			const sandbox = await createKubernetesTaskSandbox(
				live.port,
				config({ agentAddress: 'pod-ip', agentPort: agent.port }),
				{ rootDir: agent.workspace },
			)
			await expect(sandbox.destroy()).resolves.toBeUndefined()
			expect(sandbox.status).toBe('destroyed')
			expect(live.server.requests.filter((line) => line.startsWith('DELETE'))).toEqual([
				`DELETE ${claims}/${name}`,
			])
		},
	)
})
