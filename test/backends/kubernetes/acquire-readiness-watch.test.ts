// Readiness by watch, through the backend's own API client over a real loopback server: ONE
// watch of the claim by name, opened beside its POST (no version, so the server starts from the
// current state); an event that reads ready ends readiness with no GET of the claim; an event of
// a same-named object with another uid is passed over; and every way the watch cannot serve (an ERROR
// event, a stream that ends quiet, the object deleted, a refusal) falls back to polling the claim
// on the same budget — the watch may make readiness faster, never decide differently.
import { afterEach, describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import { createKubernetesClient } from '../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { apiPortOf } from '../../../src/backends/kubernetes/client-port.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { KubernetesAcquireError } from '../../../src/index.js'
import { pod, readyClaim } from './scripted-api-port.js'
import {
	type ScriptedAnswer,
	type ScriptedApiServer,
	type ScriptedRequest,
	startScriptedApiServer,
	statusBody,
} from './scripted-api-server.js'

const ns = 'sandboxes'
const claims = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`
const podPath = `/api/v1/namespaces/${ns}/pods/bound`

const servers: ScriptedApiServer[] = []
afterEach(async () => {
	await Promise.all(servers.splice(0).map((server) => server.close()))
})

const config = resolveKubernetesBackendConfig({
	tier: 'microvm',
	service: 'kubernetes',
	namespace: ns,
	access: { server: 'http://127.0.0.1:1', getToken: () => 'token' },
	sandboxTemplateName: 'task',
	warmPoolName: 'pool',
	readyPollIntervalMs: 5,
	readyTimeoutMs: 10_000,
})

const named = (object: KubernetesObject, name: string): KubernetesObject => ({
	...object,
	metadata: { ...object.metadata, name },
})

const rejectedClaim: KubernetesObject = {
	metadata: { name: 'claim' },
	status: {
		conditions: [
			{ type: 'Ready', status: 'False', reason: 'WarmPoolNotFound', message: 'no pool' },
		],
	},
}

/**
 * `watch(name)` answers the watch of the claim collection (the name from its field selector); a
 * GET of the claim answers `claimRead()`; the pod reads Running with an IP; the POST echoes its
 * body with a version and `uid`.
 */
async function acquireWith(
	watch: (claimName: string) => ScriptedAnswer,
	claimRead: () => KubernetesObject = () => readyClaim('bound'),
	uid?: string,
) {
	const server = await startScriptedApiServer((request: ScriptedRequest) => {
		if (request.method === 'POST') {
			const body = request.body as KubernetesObject
			const metadata = { ...body.metadata, resourceVersion: '7', ...(uid ? { uid } : {}) }
			return { status: 201, body: { ...body, metadata } }
		}
		if (request.method === 'GET' && request.path === claims) {
			expect(request.query.get('watch')).toBe('true')
			expect(request.query.get('resourceVersion')).toBeNull()
			return watch((request.query.get('fieldSelector') ?? '').replace(/^metadata\.name=/, ''))
		}
		if (request.method === 'GET' && request.path.startsWith(`${claims}/`)) {
			return { status: 200, body: claimRead() }
		}
		if (request.method === 'GET' && request.path === podPath) {
			return { status: 200, body: pod('uid-1', '10.0.0.9') }
		}
		return { status: 200, body: {} }
	})
	servers.push(server)
	const api = apiPortOf(createKubernetesClient({ server: server.server, getToken: () => 'token' }))
	const outcome = await acquireTaskSandbox({ api, config }).then(
		(value) => ({ value, error: undefined }),
		(error: unknown) => ({ value: undefined, error }),
	)
	return { server, ...outcome }
}

/** The POST and the watch, in whichever order they arrived. */
const postAndWatch = (server: ScriptedApiServer) => [...server.requests.slice(0, 2)].sort()

const claimGets = (server: ScriptedApiServer) =>
	server.requests.filter((line) => line.startsWith(`GET ${claims}/`)).length

describe('readiness by watch', () => {
	it('a watched event that reads ready ends readiness: no GET of the claim, one GET of the pod', async () => {
		const { server, value, error } = await acquireWith((name) => ({
			status: 200,
			body: { type: 'MODIFIED', object: named(readyClaim('bound'), name) },
		}))
		expect(error).toBeUndefined()
		expect(value).toMatchObject({ id: 'bound', token: 'uid-1' })
		expect(postAndWatch(server)).toEqual([`GET ${claims}`, `POST ${claims}`])
		expect(server.requests.slice(2)).toEqual([`GET ${podPath}`])
	})

	it('an event of a same-named object whose uid is not the one the POST answered is passed over: the claim is polled', async () => {
		const { server, value, error } = await acquireWith(
			(name) => ({
				status: 200,
				body: {
					type: 'MODIFIED',
					object: {
						...named(readyClaim('elsewhere'), name),
						metadata: { name, uid: 'uid-of-another' },
					},
				},
			}),
			() => readyClaim('bound'),
			'uid-of-mine',
		)
		expect(error).toBeUndefined()
		expect(value).toMatchObject({ id: 'bound' })
		expect(claimGets(server)).toBeGreaterThanOrEqual(1)
	})

	it.each([
		['an event naming another object', () => ({ type: 'MODIFIED', object: readyClaim('bound') })],
		['an ERROR event (410 Expired)', () => ({ type: 'ERROR', object: statusBody(410, 'Expired') })],
		['a stream that ends after a bookmark', () => ({ type: 'BOOKMARK', object: { metadata: {} } })],
		['a DELETED event', (name: string) => ({ type: 'DELETED', object: { metadata: { name } } })],
		['a body that is not a watch event', () => ({ kind: 'Status' })],
	])('%s falls back to polling the claim, and the acquire completes', async (_what, event) => {
		const { server, value, error } = await acquireWith((name) => ({
			status: 200,
			body: event(name),
		}))
		expect(error).toBeUndefined()
		expect(value).toMatchObject({ id: 'bound', token: 'uid-1' })
		expect(postAndWatch(server)).toEqual([`GET ${claims}`, `POST ${claims}`])
		expect(claimGets(server)).toBeGreaterThanOrEqual(1)
	})

	it.each([
		[403, 'Forbidden'],
		[500, 'InternalError'],
	])('a watch answered %i falls back to polling the claim', async (status, reason) => {
		const { server, value } = await acquireWith(() => ({
			status,
			body: statusBody(status, reason),
		}))
		expect(value).toMatchObject({ id: 'bound' })
		expect(postAndWatch(server)).toEqual([`GET ${claims}`, `POST ${claims}`])
		expect(server.requests[2]?.startsWith(`GET ${claims}/`)).toBe(true)
	})

	it('a refusal seen on the watch is decided as the poll decides it: claim-rejected, and the claim is deleted', async () => {
		const watched = await acquireWith((name) => ({
			status: 200,
			body: { type: 'MODIFIED', object: named(rejectedClaim, name) },
		}))
		const polled = await acquireWith(
			() => ({ status: 403, body: statusBody(403, 'Forbidden') }),
			() => rejectedClaim,
		)
		for (const outcome of [watched, polled]) {
			expect(outcome.error).toBeInstanceOf(KubernetesAcquireError)
			expect(outcome.error).toMatchObject({
				reason: 'claim-rejected',
				controllerReason: 'WarmPoolNotFound',
			})
			expect(outcome.server.requests.at(-1)).toMatch(/^DELETE /)
		}
		expect(claimGets(watched.server)).toBe(0)
	})
})
