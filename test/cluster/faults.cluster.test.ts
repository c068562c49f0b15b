// Fault injection as a test uses it, each fault in three lines or fewer: API-server faults seen
// by a client that talks through `cluster.faults.api.access` (the direct path stays healthy), and
// the process kubelet's pod faults re-exported as `cluster.faults.pods`, as the controller sees them.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { condition, createTestNamespace, isReady, waitObject } from './cluster-objects.js'
import { KubeApi } from './kube-api.js'
import { KubeletFaultError } from './kubelet/index.js'
import { directSandbox, paths } from './sandbox-fixtures.js'
import { startTestCluster, type TestCluster } from './test-cluster.js'

let cluster: TestCluster
let client: KubeApi

beforeAll(async () => {
	cluster = await startTestCluster()
	client = new KubeApi(cluster.faults.api.access)
})

afterEach(() => cluster?.faults.api.reset())

afterAll(async () => {
	await cluster?.stop()
})

describe('API server fault injection', () => {
	it('answers the next matching requests with 429 and Retry-After, then forwards again', async () => {
		const fault = cluster.faults.api.respondWith({ status: 429, count: 2, retryAfterSeconds: 3 })
		const first = await client.send('GET', '/api/v1/namespaces')
		const second = await client.send('GET', '/api/v1/namespaces')
		const third = await client.send('GET', '/api/v1/namespaces')
		expect([first.status, second.status, third.status]).toEqual([429, 429, 200])
		expect(first.body).toMatchObject({ kind: 'Status', code: 429, reason: 'TooManyRequests' })
		expect(fault.hits).toBe(2)
	})

	it('injects a 5xx only on the requests its match selects', async () => {
		const fault = cluster.faults.api.respondWith({
			status: 503,
			count: Number.POSITIVE_INFINITY,
			match: { method: 'POST', pathIncludes: '/configmaps' },
		})
		const read = await client.send('GET', '/api/v1/namespaces/default/configmaps')
		const write = await client.send('POST', '/api/v1/namespaces/default/configmaps', {
			body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'never-created' } },
		})
		expect(read.status).toBe(200)
		expect(write.status).toBe(503)
		expect(fault.requests).toEqual(['POST /api/v1/namespaces/default/configmaps'])
		expect(
			await cluster.api.find('/api/v1/namespaces/default/configmaps/never-created'),
		).toBeUndefined()
	})

	it('pauses: a request gets no answer until resume, then completes', async () => {
		const pause = cluster.faults.api.pause()
		await expect(client.send('GET', '/version', { timeoutMs: 1_000 })).rejects.toThrow(/timed out/)
		const held = client.send('GET', '/version', { timeoutMs: 20_000 })
		let settled = false
		void held.then(() => {
			settled = true
		})
		await new Promise((resolve) => setTimeout(resolve, 500))
		expect(settled).toBe(false)
		pause.resume()
		expect((await held).status).toBe(200)
	})

	it('freezes the real API server process for every client, then thaws it', async () => {
		const frozen = await cluster.faults.api.freezeServer()
		await expect(cluster.api.send('GET', '/version', { timeoutMs: 1_000 })).rejects.toThrow()
		await frozen.thaw()
		expect((await cluster.api.send('GET', '/version')).status).toBe(200)
	})

	it('leaves the direct path untouched while the proxy path fails', async () => {
		cluster.faults.api.respondWith({ status: 500, count: Number.POSITIVE_INFINITY })
		expect((await client.send('GET', '/version')).status).toBe(500)
		expect((await cluster.api.send('GET', '/version')).status).toBe(200)
	})
})

describe('pod faults through cluster.faults.pods', () => {
	it('an Unschedulable pod shows as PodScheduled=False/Unschedulable on its Sandbox', async () => {
		const ns = await createTestNamespace(cluster.api, 'faults')
		await cluster.faults.pods.markUnschedulable({ namespace: ns, name: 'held' })
		await cluster.api.create(paths.sandboxes(ns), directSandbox('held', { workspace: false }))
		const sandbox = await waitObject(
			cluster.api,
			paths.sandbox(ns, 'held'),
			'Sandbox PodScheduled=False',
			(object) => condition(object, 'PodScheduled')?.status === 'False',
		)
		expect(condition(sandbox, 'PodScheduled')?.reason).toBe('Unschedulable')
		expect(condition(sandbox, 'Ready')?.status).toBe('False')
	})

	it('a killed agent is restarted in place and the Sandbox becomes Ready again', async () => {
		const ns = await createTestNamespace(cluster.api, 'faults')
		await cluster.api.create(paths.sandboxes(ns), directSandbox('killed', { workspace: false }))
		const before = await waitObject(cluster.api, paths.pod(ns, 'killed'), 'pod Ready', isReady)
		await cluster.faults.pods.killAgent({ namespace: ns, name: 'killed' })
		const after = await waitObject(cluster.api, paths.pod(ns, 'killed'), 'pod restarted', (pod) =>
			JSON.stringify(pod.status?.containerStatuses).includes('"restartCount":1'),
		)
		expect(after.metadata.uid).toBe(before.metadata.uid)
		await waitObject(cluster.api, paths.sandbox(ns, 'killed'), 'Sandbox Ready', isReady)
	})

	it('marking a pod the kubelet already bound is refused as already-scheduled', async () => {
		const ns = await createTestNamespace(cluster.api, 'faults')
		await cluster.api.create(paths.sandboxes(ns), directSandbox('bound', { workspace: false }))
		await waitObject(cluster.api, paths.pod(ns, 'bound'), 'pod bound', (pod) =>
			Boolean(pod.spec?.nodeName),
		)
		const refused = await cluster.faults.pods
			.markUnschedulable({ namespace: ns, name: 'bound' })
			.catch((error: unknown) => error)
		expect(refused).toBeInstanceOf(KubeletFaultError)
		expect(refused).toMatchObject({ reason: 'already-scheduled' })
	})

	it('a namespace fault reaches a pod named only after it was set, and lifting it lets the pod run', async () => {
		const ns = await createTestNamespace(cluster.api, 'faults')
		const lift = cluster.faults.pods.faultNamespace(ns, 'unschedulable')
		await cluster.api.create(paths.sandboxes(ns), directSandbox('later', { workspace: false }))
		const held = await waitObject(
			cluster.api,
			paths.pod(ns, 'later'),
			'pod PodScheduled=False',
			(pod) => condition(pod, 'PodScheduled')?.reason === 'Unschedulable',
		)
		expect(held.spec?.nodeName ?? '').toBe('')
		lift()
		await waitObject(cluster.api, paths.sandbox(ns, 'later'), 'Sandbox Ready', isReady)
	})

	it('a namespace image-pull fault fails the pods of that namespace only', async () => {
		const ns = await createTestNamespace(cluster.api, 'faults')
		const other = await createTestNamespace(cluster.api, 'faults')
		const lift = cluster.faults.pods.faultNamespace(ns, 'image-pull')
		try {
			await cluster.api.create(paths.sandboxes(ns), directSandbox('pull', { workspace: false }))
			await cluster.api.create(paths.sandboxes(other), directSandbox('pull', { workspace: false }))
			await waitObject(cluster.api, paths.pod(ns, 'pull'), 'pod ErrImagePull', (pod) =>
				JSON.stringify(pod.status?.containerStatuses).includes('"reason":"ErrImagePull"'),
			)
			await waitObject(cluster.api, paths.sandbox(other, 'pull'), 'Sandbox Ready', isReady)
		} finally {
			lift()
		}
	})
})
