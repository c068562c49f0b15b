// The client's own request discipline, pinned through an injected recording `fetch`: exact request
// lines, content types, the bearer header, DeleteOptions, one request per verb (a create POST is
// never retried), the per-request bound around getToken(), and the caller's own abort.
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import {
	KubernetesApiError,
	KubernetesApiTimeoutError,
	KubernetesCredentialError,
	KubernetesPatchNotAppliedError,
} from '../../../../src/backends/kubernetes/api/api-errors.js'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { asRejection, unexpected } from './rejection.js'

interface Recorded {
	readonly line: string
	readonly headers: Record<string, string>
	readonly body: string | undefined
}

const TOKEN = 'sekret-token-value'

function recorder(answer: (line: string) => Response = () => json(200, { ok: true })) {
	const requests: Recorded[] = []
	const fetch = async (url: string, init: RequestInit): Promise<Response> => {
		const parsed = new URL(url)
		const line = `${init.method} ${parsed.pathname}${parsed.search}`
		requests.push({
			line,
			headers: { ...(init.headers as Record<string, string>) },
			body: typeof init.body === 'string' ? init.body : undefined,
		})
		return answer(line)
	}
	return { requests, fetch }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
	return new Response(JSON.stringify(body), {
		status,
		headers: { 'content-type': 'application/json', ...headers },
	})
}

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
	const server = createServer()
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	await new Promise((resolve) => server.close(resolve))
	if (address === null || typeof address === 'string') throw new Error('no port')
	return address.port
}

const access = { server: 'https://k8s.example/', getToken: () => TOKEN }

describe('request lines and content types', () => {
	it('issues exactly one request per verb with the right method, path, query and content type', async () => {
		const { requests, fetch } = recorder()
		const client = createKubernetesClient(access, { fetch })
		await client.get('/api/v1/namespaces/ns/pods/p')
		await client.list('/api/v1/namespaces/ns/pods', { labelSelector: { app: 'a', tier: 'x' } })
		await client.list('/api/v1/namespaces/ns/pods', { labelSelector: 'app!=b', limit: 5 })
		await client.create('/api/v1/namespaces/ns/configmaps', { metadata: { name: 'c' } })
		await client.mergePatch('/api/v1/namespaces/ns/configmaps/c', { data: { a: '1' } })
		await client.jsonPatch('/api/v1/namespaces/ns/configmaps/c', [
			{ op: 'test', path: '/metadata/resourceVersion', value: '7' },
			{ op: 'replace', path: '/data/a', value: '2' },
		])
		await client.delete('/api/v1/namespaces/ns/configmaps/c')
		await client.delete('/api/v1/namespaces/ns/configmaps/c', {
			propagationPolicy: 'Foreground',
			preconditions: { uid: 'u-1', resourceVersion: '9' },
		})
		await client.request({
			method: 'PATCH',
			path: '/api/v1/namespaces/ns/configmaps/c',
			patchType: 'strategic',
			body: { data: { b: '3' } },
		})
		expect(requests.map((entry) => entry.line)).toEqual([
			'GET /api/v1/namespaces/ns/pods/p',
			'GET /api/v1/namespaces/ns/pods?labelSelector=app%3Da%2Ctier%3Dx',
			'GET /api/v1/namespaces/ns/pods?labelSelector=app%21%3Db&limit=5',
			'POST /api/v1/namespaces/ns/configmaps',
			'PATCH /api/v1/namespaces/ns/configmaps/c',
			'PATCH /api/v1/namespaces/ns/configmaps/c',
			'DELETE /api/v1/namespaces/ns/configmaps/c',
			'DELETE /api/v1/namespaces/ns/configmaps/c',
			'PATCH /api/v1/namespaces/ns/configmaps/c',
		])
		expect(requests.map((entry) => entry.headers['content-type'])).toEqual([
			undefined,
			undefined,
			undefined,
			'application/json',
			'application/merge-patch+json',
			'application/json-patch+json',
			undefined,
			'application/json',
			'application/strategic-merge-patch+json',
		])
		for (const entry of requests) {
			expect(entry.headers.authorization).toBe(`Bearer ${TOKEN}`)
			expect(entry.headers.accept).toBe('application/json')
		}
		expect(JSON.parse(requests[5]?.body ?? '')).toEqual([
			{ op: 'test', path: '/metadata/resourceVersion', value: '7' },
			{ op: 'replace', path: '/data/a', value: '2' },
		])
		expect(requests[6]?.body).toBeUndefined()
		expect(JSON.parse(requests[7]?.body ?? '')).toEqual({
			apiVersion: 'v1',
			kind: 'DeleteOptions',
			propagationPolicy: 'Foreground',
			preconditions: { uid: 'u-1', resourceVersion: '9' },
		})
	})

	it('never retries a create POST: a 503 rejects after exactly one request', async () => {
		const { requests, fetch } = recorder(() =>
			json(503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable', message: 'busy' }),
		)
		const client = createKubernetesClient(access, { fetch })
		const error = await client
			.create('/api/v1/namespaces/ns/configmaps', {})
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({ status: 503, retryable: true, transport: 'status', verb: 'POST' })
		expect(requests).toHaveLength(1)
	})

	it('reports a failed JSON-patch test as KubernetesPatchNotAppliedError', async () => {
		const { fetch } = recorder(() =>
			json(422, {
				kind: 'Status',
				code: 422,
				reason: 'Invalid',
				message: 'the server rejected our request due to an error in our request',
			}),
		)
		const client = createKubernetesClient(access, { fetch })
		await expect(
			client.jsonPatch('/api/v1/x', [{ op: 'test', path: '/x', value: 1 }]),
		).rejects.toBeInstanceOf(KubernetesPatchNotAppliedError)
	})
})

describe('the per-request bound around getToken() and the caller signal', () => {
	it('a token provider that never settles rejects with KubernetesApiTimeoutError at the bound, sending nothing', async () => {
		const { requests, fetch } = recorder()
		const client = createKubernetesClient(
			{ server: 'https://k8s.example', getToken: () => new Promise<string>(() => {}) },
			{ fetch, apiRequestTimeoutMs: 1000 },
		)
		const error = await client.get('/api/v1/namespaces').then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
		expect(error).not.toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({ verb: 'GET', path: '/api/v1/namespaces', timeoutMs: 1000 })
		expect(requests).toHaveLength(0)
	})

	it('with a caller signal that never fires, the bound still ends the request', async () => {
		const fetch = (_url: string, init: RequestInit) =>
			new Promise<Response>((_resolve, reject) => {
				init.signal?.addEventListener('abort', () => reject(init.signal?.reason))
			})
		const client = createKubernetesClient(access, { fetch, apiRequestTimeoutMs: 1000 })
		const caller = new AbortController()
		const error = await client
			.get('/version', { signal: caller.signal })
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
		expect(error.message).not.toContain(TOKEN)
		expect(JSON.stringify(error)).not.toContain(TOKEN)
		expect(Object.values(error).join(' ')).not.toContain(TOKEN)
	})

	it('a caller signal that aborts first rejects with the caller reason, not a timeout', async () => {
		const fetch = (_url: string, init: RequestInit) =>
			new Promise<Response>((_resolve, reject) => {
				init.signal?.addEventListener('abort', () => reject(new Error('fetch saw abort')))
			})
		const client = createKubernetesClient(access, { fetch, apiRequestTimeoutMs: 5000 })
		const caller = new AbortController()
		const reason = new Error('caller gave up')
		setTimeout(() => caller.abort(reason), 20)
		const error = await client
			.get('/version', { signal: caller.signal })
			.then(unexpected, asRejection)
		expect(error).toBe(reason)
		const already = AbortSignal.abort(reason)
		await expect(client.get('/version', { signal: already })).rejects.toBe(reason)
	})

	it('a token provider that throws rejects with KubernetesCredentialError', async () => {
		const client = createKubernetesClient({
			server: 'https://k8s.example',
			getToken: () => Promise.reject(new Error('vault sealed')),
		})
		const error = await client.get('/version').then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesCredentialError)
		expect(error).toMatchObject({ access: 'token-provider', cause: { message: 'vault sealed' } })
	})

	it('a server that refuses the connection rejects with transport connect through the real fetch', async () => {
		const port = await closedPort()
		const client = createKubernetesClient({
			server: `http://127.0.0.1:${port}`,
			getToken: () => TOKEN,
		})
		const error = await client.get('/version').then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({
			transport: 'connect',
			status: undefined,
			retryable: true,
			reason: 'connect-failed',
		})
		expect(error.message).toMatch(
			/^kubernetes GET \/version failed: could not reach the API server \(ECONNREFUSED\)/,
		)
	})
})
