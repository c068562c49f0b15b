// The per-request bound as a number: the 30000 ms default of a one-argument client, a configured
// bound ending every verb at exactly that value, the floor refused by the client AND the backend
// at construction, the bound armed with or without a caller signal, what a timeout names, and the
// backend handing its `apiRequestTimeoutMs` to the client it builds (an acquire fails at it).
// Timers are faked (setTimeout/clearTimeout only) where the point is the exact bound; requests
// that are never answered are a token provider that never settles or a `fetch` that waits for
// its abort, so nothing depends on wall-clock speed.
import { createServer, type Server } from 'node:http'
import { createServer as createTcpServer, type Socket } from 'node:net'
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import type { KubernetesClient } from '../../../../src/backends/kubernetes/api/kubernetes-client.js'
import { kubernetesPaths } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	createSandboxProvider,
	KubernetesAcquireError,
	KubernetesApiError,
	KubernetesApiTimeoutError,
	type KubernetesBackendConfig,
	type KubernetesHttpMethod,
	SandboxConfigError,
} from '../../../../src/index.js'
import { asRejection, type Rejection } from './rejection.js'

const TOKEN = 'bound-test-token-7f3a'
const never = () => new Promise<string>(() => {})

afterEach(() => {
	vi.useRealTimers()
})

function fakeTimers(): void {
	vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
}

/** A `fetch` that never answers and rejects only when its signal aborts. */
const unansweredFetch = (_url: string, init: RequestInit) =>
	new Promise<Response>((_resolve, reject) => {
		init.signal?.addEventListener('abort', () => reject(new Error('fetch aborted')))
	})

/** Tracks a promise's outcome without awaiting it, so fake time can be advanced around it. */
function track<T>(promise: Promise<T>): { settled: () => boolean; error: () => Rejection } {
	let settled = false
	let failure: unknown
	promise.then(
		() => {
			settled = true
		},
		(error: unknown) => {
			settled = true
			failure = error
		},
	)
	return { settled: () => settled, error: () => asRejection(failure) }
}

/** Advances fake time to one ms before `boundMs` (still pending), then to it (settled). */
async function settlesExactlyAt<T>(promise: Promise<T>, boundMs: number): Promise<Rejection> {
	const outcome = track(promise)
	await vi.advanceTimersByTimeAsync(boundMs - 1)
	expect(outcome.settled()).toBe(false)
	await vi.advanceTimersByTimeAsync(1)
	expect(outcome.settled()).toBe(true)
	return outcome.error()
}

const everyVerb = (client: KubernetesClient): Array<[KubernetesHttpMethod, Promise<unknown>]> => [
	['GET', client.get('/api/v1/namespaces/ns/pods/p')],
	['GET', client.list('/api/v1/namespaces/ns/pods')],
	['POST', client.create('/api/v1/namespaces/ns/configmaps', {})],
	['PATCH', client.mergePatch('/api/v1/namespaces/ns/configmaps/c', {})],
	['PATCH', client.jsonPatch('/api/v1/namespaces/ns/configmaps/c', [])],
	['DELETE', client.delete('/api/v1/namespaces/ns/configmaps/c')],
]

describe('the bound of the client', () => {
	it('a one-argument client works and bounds every request at the 30000 ms default', async () => {
		const server: Server = createServer((_req, res) => {
			res.writeHead(200, { 'content-type': 'application/json' })
			res.end('{"kind":"APIVersions"}')
		})
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
		try {
			const address = server.address()
			if (address === null || typeof address === 'string') throw new Error('no port')
			const working = createKubernetesClient({
				server: `http://127.0.0.1:${address.port}`,
				getToken: () => TOKEN,
			})
			expect(await working.get('/api')).toEqual({ kind: 'APIVersions' })
		} finally {
			server.closeAllConnections()
			await new Promise((resolve) => server.close(resolve))
		}
		fakeTimers()
		const stalled = createKubernetesClient({ server: 'https://k8s.example', getToken: never })
		const requests = everyVerb(stalled)
		const outcomes = requests.map(([, promise]) => track(promise))
		await vi.advanceTimersByTimeAsync(29_999)
		expect(outcomes.map((outcome) => outcome.settled())).toEqual(requests.map(() => false))
		await vi.advanceTimersByTimeAsync(1)
		for (const [index, [verb]] of requests.entries()) {
			const error = outcomes[index]?.error()
			expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
			expect(error).toMatchObject({ verb, timeoutMs: 30_000 })
		}
	})

	it.each([1000, 120_000])(
		'a bound of %i ms ends every verb at exactly that bound',
		async (bound) => {
			fakeTimers()
			const client = createKubernetesClient(
				{ server: 'https://k8s.example', getToken: () => TOKEN },
				{ apiRequestTimeoutMs: bound, fetch: unansweredFetch },
			)
			const requests = everyVerb(client)
			const outcomes = requests.map(([, promise]) => track(promise))
			await vi.advanceTimersByTimeAsync(bound - 1)
			expect(outcomes.map((outcome) => outcome.settled())).toEqual(requests.map(() => false))
			await vi.advanceTimersByTimeAsync(1)
			for (const [index, [verb]] of requests.entries()) {
				const error = outcomes[index]?.error()
				expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
				expect(error).toMatchObject({ verb, timeoutMs: bound })
			}
		},
	)

	it('arms the bound with and without a caller signal, and ends at whichever fires first', async () => {
		fakeTimers()
		const client = createKubernetesClient(
			{ server: 'https://k8s.example', getToken: () => TOKEN },
			{ apiRequestTimeoutMs: 5000, fetch: unansweredFetch },
		)
		// No signal: the bound alone ends it.
		const bare = await settlesExactlyAt(client.get('/version'), 5000)
		expect(bare).toBeInstanceOf(KubernetesApiTimeoutError)
		// A signal that never fires: the bound still ends it.
		const idle = new AbortController()
		const waited = await settlesExactlyAt(client.get('/version', { signal: idle.signal }), 5000)
		expect(waited).toBeInstanceOf(KubernetesApiTimeoutError)
		// The caller's signal fires first: its reason, not a timeout, and before the bound.
		const caller = new AbortController()
		const reason = new Error('caller gave up')
		const early = track(client.get('/version', { signal: caller.signal }))
		await vi.advanceTimersByTimeAsync(1000)
		caller.abort(reason)
		await vi.advanceTimersByTimeAsync(0)
		expect(early.settled()).toBe(true)
		expect(early.error()).toBe(reason)
		expect(early.error()).not.toBeInstanceOf(KubernetesApiTimeoutError)
	})

	it('a timeout names the verb (a KubernetesHttpMethod), the path and the bound, and never the token', async () => {
		const sockets = new Set<Socket>()
		const silent = createTcpServer((socket) => {
			sockets.add(socket)
		})
		await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
		try {
			const address = silent.address()
			if (address === null || typeof address === 'string') throw new Error('no port')
			const client = createKubernetesClient(
				{ server: `http://127.0.0.1:${address.port}`, getToken: () => TOKEN },
				{ apiRequestTimeoutMs: 1000 },
			)
			const path = '/apis/agents.x-k8s.io/v1alpha1/namespaces/ns/sandboxes/s'
			const caught: unknown = await client.delete(path).then(
				() => undefined,
				(error: unknown) => error,
			)
			expect(caught).toBeInstanceOf(KubernetesApiTimeoutError)
			const error = caught as KubernetesApiTimeoutError
			expectTypeOf(error.verb).toEqualTypeOf<KubernetesHttpMethod>()
			expect(error).not.toBeInstanceOf(KubernetesApiError)
			expect({ verb: error.verb, path: error.path, timeoutMs: error.timeoutMs }).toEqual({
				verb: 'DELETE',
				path,
				timeoutMs: 1000,
			})
			expect(error.message).toContain('DELETE')
			expect(error.message).toContain(path)
			expect(error.message).toContain('1000 ms')
			const everything = [
				error.message,
				String(error.stack),
				JSON.stringify(error),
				...Object.values(error).map(String),
			].join('\n')
			expect(everything).not.toContain(TOKEN)
		} finally {
			for (const socket of sockets) socket.destroy()
			await new Promise((resolve) => silent.close(resolve))
		}
	})
})

describe('the bound of the backend', () => {
	const backend = (overrides: Partial<KubernetesBackendConfig> = {}): KubernetesBackendConfig => ({
		tier: 'microvm',
		service: 'kubernetes',
		namespace: 'sandboxes',
		access: { server: 'https://k8s.example', getToken: never },
		sandboxTemplateName: 'task',
		...overrides,
	})

	it.each([0, 999, Number.NaN, Number.POSITIVE_INFINITY])(
		'apiRequestTimeoutMs %s is refused by the client and by the backend at construction, before any request',
		(value) => {
			let tokens = 0
			const counting = () => {
				tokens++
				return TOKEN
			}
			const access = { server: 'https://k8s.example', getToken: counting }
			expect(() => createKubernetesClient(access, { apiRequestTimeoutMs: value })).toThrow(
				expect.objectContaining({ field: 'apiRequestTimeoutMs' }),
			)
			let refused: unknown
			try {
				createSandboxProvider({ backend: backend({ access, apiRequestTimeoutMs: value }) })
			} catch (error) {
				refused = error
			}
			expect(refused).toBeInstanceOf(SandboxConfigError)
			expect(refused).toMatchObject({ field: 'apiRequestTimeoutMs' })
			expect(tokens).toBe(0)
		},
	)

	it.each([
		['omitted', undefined, 30_000],
		['1000', 1000, 1000],
		['120000', 120_000, 120_000],
	])(
		'an acquire against an API server that never answers fails with api-timeout at the bound (%s)',
		async (_label, apiRequestTimeoutMs, bound) => {
			fakeTimers()
			const provider = createSandboxProvider({
				backend: backend(apiRequestTimeoutMs === undefined ? {} : { apiRequestTimeoutMs }),
			})
			const error = await settlesExactlyAt(provider.create(), bound)
			expect(error).toBeInstanceOf(KubernetesAcquireError)
			expect(error).toMatchObject({ reason: 'api-timeout', retryable: true })
			expect(error.cause).toBeInstanceOf(KubernetesApiTimeoutError)
			expect(error.cause).toMatchObject({
				verb: 'GET',
				path: kubernetesPaths.template('sandboxes', 'task'),
				timeoutMs: bound,
			})
		},
	)
})
