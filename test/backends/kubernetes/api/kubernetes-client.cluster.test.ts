// The API client against the harness's real kube-apiserver: every verb, the API server's own
// refusals (409 stale resourceVersion, 409 AlreadyExists, 422 invalid object, a failed JSON-patch
// test, delete preconditions, gone objects), faults through the proxy (an API server that accepts
// and never answers; 429 with Retry-After), and the kubeconfig and in-cluster access forms.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	KubernetesApiTimeoutError,
	KubernetesConflictError,
	KubernetesPatchNotAppliedError,
} from '../../../../src/backends/kubernetes/api/api-errors.js'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import type { KubernetesClient } from '../../../../src/backends/kubernetes/api/kubernetes-client.js'
import { createTestNamespace } from '../../../cluster/cluster-objects.js'
import { startTestCluster, type TestCluster } from '../../../cluster/test-cluster.js'
import { asRejection, unexpected } from './rejection.js'

interface ConfigMap {
	readonly metadata: {
		readonly name: string
		readonly uid: string
		readonly resourceVersion: string
		readonly labels?: Record<string, string>
	}
	readonly data?: Record<string, string>
}

let cluster: TestCluster
let client: KubernetesClient
let ns: string
const configMaps = () => `/api/v1/namespaces/${ns}/configmaps`
const configMap = (name: string) => `${configMaps()}/${name}`
const newConfigMap = (name: string, labels: Record<string, string> = {}, data = { a: '1' }) => ({
	apiVersion: 'v1',
	kind: 'ConfigMap',
	metadata: { name, labels },
	data,
})

beforeAll(async () => {
	cluster = await startTestCluster()
	console.log(`cluster: kubernetes ${cluster.versions.kubernetes}`)
	const { server, token, caPem } = cluster.access
	client = createKubernetesClient({
		server,
		getToken: () => token,
		...(caPem === undefined ? {} : { ca: caPem }),
	})
	ns = await createTestNamespace(cluster.api, 'k8s-client')
})

afterEach(() => cluster?.faults.api.reset())

afterAll(async () => {
	await cluster?.stop()
})

describe('verbs against the real API server', () => {
	it('creates, gets and lists by label selector', async () => {
		const created = await client.create<ConfigMap>(
			configMaps(),
			newConfigMap('one', { app: 'k8s-client', pick: 'yes' }),
		)
		await client.create(configMaps(), newConfigMap('two', { app: 'k8s-client', pick: 'no' }))
		const read = await client.get<ConfigMap>(configMap('one'))
		expect(read.metadata.uid).toBe(created.metadata.uid)
		const picked = await client.list<ConfigMap>(configMaps(), {
			labelSelector: { app: 'k8s-client', pick: 'yes' },
		})
		expect(picked.items.map((item) => item.metadata.name)).toEqual(['one'])
		const notPicked = await client.list<ConfigMap>(configMaps(), {
			labelSelector: 'app=k8s-client,pick!=yes',
		})
		expect(notPicked.items.map((item) => item.metadata.name)).toEqual(['two'])
	})

	it('a second create of the same name is a 409 AlreadyExists KubernetesConflictError', async () => {
		await client.create(configMaps(), newConfigMap('dup'))
		const error = await client
			.create(configMaps(), newConfigMap('dup'))
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesConflictError)
		expect(error).toMatchObject({
			status: 409,
			statusReason: 'AlreadyExists',
			verb: 'POST',
			retryable: false,
		})
	})

	it('an invalid object is a 422 KubernetesApiError with reason Invalid', async () => {
		const error = await client
			.create(configMaps(), newConfigMap('Not_A_Valid_Name'))
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).not.toBeInstanceOf(KubernetesPatchNotAppliedError)
		expect(error).toMatchObject({ status: 422, statusReason: 'Invalid', transport: 'status' })
	})

	it('merge-patches and JSON-patches; a JSON patch whose test fails applies nothing', async () => {
		await client.create(configMaps(), newConfigMap('patched'))
		const merged = await client.mergePatch<ConfigMap>(configMap('patched'), { data: { b: '2' } })
		expect(merged.data).toEqual({ a: '1', b: '2' })
		const tested = await client.jsonPatch<ConfigMap>(configMap('patched'), [
			{ op: 'test', path: '/data/a', value: '1' },
			{ op: 'replace', path: '/data/a', value: '10' },
		])
		expect(tested.data).toEqual({ a: '10', b: '2' })
		const error = await client
			.jsonPatch(configMap('patched'), [
				{ op: 'test', path: '/data/a', value: '1' },
				{ op: 'replace', path: '/data/a', value: '99' },
			])
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesPatchNotAppliedError)
		expect(error).toMatchObject({
			verb: 'PATCH',
			status: 422,
			statusReason: 'Invalid',
			retryable: false,
		})
		expect((await client.get<ConfigMap>(configMap('patched'))).data).toEqual({ a: '10', b: '2' })
	})

	it('a write carrying a stale resourceVersion is a 409 KubernetesConflictError', async () => {
		const first = await client.create<ConfigMap>(configMaps(), newConfigMap('stale'))
		await client.mergePatch(configMap('stale'), { data: { a: '2' } })
		const error = await client
			.mergePatch(configMap('stale'), {
				metadata: { resourceVersion: first.metadata.resourceVersion },
				data: { a: '3' },
			})
			.then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesConflictError)
		expect(error).toMatchObject({ status: 409, statusReason: 'Conflict' })
		expect((await client.get<ConfigMap>(configMap('stale'))).data).toEqual({ a: '2' })
	})

	it('deletes only while the preconditions hold; a gone object is KubernetesAlreadyGoneError on delete and patch', async () => {
		const created = await client.create<ConfigMap>(configMaps(), newConfigMap('doomed'))
		const refused = await client
			.delete(configMap('doomed'), {
				preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
			})
			.then(unexpected, asRejection)
		expect(refused).toBeInstanceOf(KubernetesConflictError)
		expect(refused).toMatchObject({ status: 409, verb: 'DELETE' })
		await client.get(configMap('doomed'))
		await client.delete(configMap('doomed'), {
			propagationPolicy: 'Background',
			preconditions: {
				uid: created.metadata.uid,
				resourceVersion: created.metadata.resourceVersion,
			},
		})
		const again = await client.delete(configMap('doomed')).then(unexpected, asRejection)
		expect(again).toBeInstanceOf(KubernetesAlreadyGoneError)
		expect(again).toMatchObject({ status: 404, statusReason: 'NotFound' })
		const patch = await client
			.mergePatch(configMap('doomed'), { data: {} })
			.then(unexpected, asRejection)
		expect(patch).toBeInstanceOf(KubernetesAlreadyGoneError)
		const read = await client.get(configMap('doomed')).then(unexpected, asRejection)
		expect(read).toBeInstanceOf(KubernetesApiError)
		expect(read).not.toBeInstanceOf(KubernetesAlreadyGoneError)
		expect(read).toMatchObject({ status: 404, statusReason: 'NotFound', verb: 'GET' })
	})
})

describe('faults through the proxy', () => {
	const proxied = (apiRequestTimeoutMs?: number) => {
		const { server, token, caPem } = cluster.faults.api.access
		return createKubernetesClient(
			{ server, getToken: () => token, ...(caPem === undefined ? {} : { ca: caPem }) },
			apiRequestTimeoutMs === undefined ? {} : { apiRequestTimeoutMs },
		)
	}

	it('an API server that accepts and never answers rejects with KubernetesApiTimeoutError at the bound', async () => {
		const pause = cluster.faults.api.pause()
		try {
			const caller = new AbortController()
			const path = `/api/v1/namespaces/${ns}/pods`
			const error = await proxied(1000)
				.get(path, { signal: caller.signal })
				.then(unexpected, asRejection)
			expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
			expect(error).not.toBeInstanceOf(KubernetesApiError)
			expect(error).toMatchObject({ verb: 'GET', path, timeoutMs: 1000 })
			expect(error.message).not.toContain(cluster.access.token)
			expect(error.message).not.toMatch(/kubernetes .* failed:/)
		} finally {
			pause.resume()
		}
	})

	it('a 429 carries Retry-After in ms and is retryable; the next request goes through', async () => {
		cluster.faults.api.respondWith({ status: 429, count: 1, retryAfterSeconds: 2 })
		const client429 = proxied()
		const error = await client429.get(`/api/v1/namespaces/${ns}`).then(unexpected, asRejection)
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({
			status: 429,
			statusReason: 'TooManyRequests',
			retryAfterMs: 2000,
			retryable: true,
			transport: 'status',
		})
		expect(await client429.get(`/api/v1/namespaces/${ns}`)).toMatchObject({
			metadata: { name: ns },
		})
	})

	it('a 503 is a retryable status failure', async () => {
		cluster.faults.api.respondWith({ status: 503, count: 1 })
		const error = await proxied().get('/version').then(unexpected, asRejection)
		expect(error).toMatchObject({ name: 'KubernetesApiError', status: 503, retryable: true })
	})
})

describe('access forms', () => {
	it('reads the harness kubeconfig file (explicit path and KUBECONFIG) and talks to the cluster', async () => {
		const explicit = createKubernetesClient({ kubeconfig: cluster.kubeconfigPath })
		expect(await explicit.get('/version')).toMatchObject({
			gitVersion: cluster.versions.kubernetes,
		})
		const fromEnv = createKubernetesClient(
			{},
			{
				environment: {
					env: { KUBECONFIG: `${cluster.kubeconfigPath}:/nowhere` },
					homeDir: '/nowhere',
				},
			},
		)
		expect(await fromEnv.get(`/api/v1/namespaces/${ns}`)).toMatchObject({
			metadata: { name: ns },
		})
	})

	it('in-cluster: reads the ServiceAccount files and re-reads the token on every request', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'namzu-sa-'))
		try {
			const url = new URL(cluster.access.server)
			writeFileSync(join(dir, 'token'), cluster.access.token)
			writeFileSync(join(dir, 'ca.crt'), cluster.access.caPem ?? '')
			writeFileSync(join(dir, 'namespace'), `${ns}\n`)
			const inCluster = createKubernetesClient(
				{ inCluster: true },
				{
					environment: {
						serviceAccountDir: dir,
						env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
					},
				},
			)
			expect(inCluster.namespace).toBe(ns)
			expect(await inCluster.get(`/api/v1/namespaces/${ns}`)).toMatchObject({
				metadata: { name: ns },
			})
			writeFileSync(join(dir, 'token'), 'rotated-but-wrong')
			const refused = await inCluster.get(`/api/v1/namespaces/${ns}`).then(unexpected, asRejection)
			expect(refused).toBeInstanceOf(KubernetesApiError)
			expect(refused).toMatchObject({ status: 401, statusReason: 'Unauthorized', retryable: false })
			expect(refused.message).not.toContain('rotated-but-wrong')
			writeFileSync(join(dir, 'token'), cluster.access.token)
			expect(await inCluster.get(`/api/v1/namespaces/${ns}`)).toMatchObject({
				metadata: { name: ns },
			})
		} finally {
			rmSync(dir, { recursive: true, force: true })
		}
	})
})
