// The fleet verbs against the real API server, through a recording front: the capacity read is
// exactly three GETs (the configured warm pool, the claims collection, the pods collection) and no
// write, counting only this pool's claims and only Pending pods; release is one LIST by the label
// selector and one DELETE per claim found; both verbs give up on their signal while the API
// server holds the request, long before the request bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readKubernetesTaskCapacity, releaseKubernetesTaskSandboxes } from '../../../src/index.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { rejection } from './error-chain.js'
import { listClaims, poolName, useKubernetesHarness, waitPoolReady } from './kubernetes-harness.js'
import { type RecordingApiProxy, startRecordingApiProxy } from './recording-api-proxy.js'

const replicas = 3
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-fleet',
	refillPoolAfterEach: true,
})
const open = h.open

let proxy: RecordingApiProxy

beforeAll(async () => {
	proxy = await startRecordingApiProxy(h.cluster.access)
})

afterAll(async () => {
	await proxy?.close()
})

function recordedConfig() {
	const token = h.cluster.access.token
	return h.config({ access: { server: proxy.server, getToken: async () => token } })
}

describe('readKubernetesTaskCapacity on the harness', () => {
	it('is exactly three GETs — the warm pool, the claims, the pods — counting this pool’s claims and only Pending pods', async () => {
		const ns = h.namespace
		const sandbox = await h.provider().create()
		open.push(sandbox)
		// The pool refills the replica the claim took: wait, so its pod is no longer Pending.
		await waitPoolReady(h.cluster, ns, poolName, replicas)
		// A claim of another pool (rejected by the controller, but it exists) is not this pool's.
		await h.cluster.api.create(paths.claims(ns), {
			apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
			kind: 'SandboxClaim',
			metadata: { name: 'other-pool-claim' },
			spec: { warmPoolRef: { name: 'other-pool' } },
		})
		// A pod bound to a node that does not exist stays in phase Pending.
		await h.cluster.api.create(paths.pods(ns), {
			apiVersion: 'v1',
			kind: 'Pod',
			metadata: { name: 'stuck-pending' },
			spec: { nodeName: 'no-such-node', containers: [{ name: 'c', image: 'none' }] },
		})
		try {
			proxy.clear()
			const capacity = await readKubernetesTaskCapacity(recordedConfig())
			expect(proxy.requests.map((line) => line.split('?')[0])).toEqual([
				`GET ${paths.pool(ns, poolName)}`,
				`GET ${paths.claims(ns)}`,
				`GET ${paths.pods(ns)}`,
			])
			expect(capacity).toEqual({
				warmPool: { ready: replicas, desired: replicas },
				activeClaims: 1,
				pendingPods: 1,
			})
		} finally {
			await h.cluster.api.remove(paths.claim(ns, 'other-pool-claim'))
			await h.cluster.api.remove(paths.pod(ns, 'stuck-pending'), { gracePeriodSeconds: 0 })
		}
	})

	it('rejects with the caller’s abort reason while the API server holds its request, well before the request bound', async () => {
		const pause = h.cluster.faults.api.pause()
		try {
			const controller = new AbortController()
			const reason = new Error('caller gave up')
			setTimeout(() => controller.abort(reason), 300)
			const { error, elapsedMs } = await rejection(
				readKubernetesTaskCapacity(h.faultedConfig(), { signal: controller.signal }),
			)
			expect(error).toBe(reason)
			expect(elapsedMs).toBeLessThan(5_000)
		} finally {
			pause.resume()
		}
	})
})

describe('releaseKubernetesTaskSandboxes on the harness', () => {
	it('lists claims by the selector once and deletes each one found, naming them', async () => {
		const ns = h.namespace
		const labels = { 'namzu.test/fleet': 'release-me' }
		const a = await h.provider({ claimLabels: labels }).create()
		const b = await h.provider({ claimLabels: labels }).create()
		const kept = await h.provider().create()
		open.push(a, b, kept)
		const names = (await listClaims(h.cluster, ns))
			.filter((claim) => claim.metadata.labels?.['namzu.test/fleet'] === 'release-me')
			.map((claim) => claim.metadata.name)
			.sort()
		expect(names).toHaveLength(2)

		proxy.clear()
		const released = await releaseKubernetesTaskSandboxes(recordedConfig(), {
			labelSelector: 'namzu.test/fleet=release-me',
		})
		expect(released.deleted).toBe(2)
		expect([...released.names].sort()).toEqual(names)
		const [list, ...deletes] = proxy.requests
		expect(list).toBe(
			`GET ${paths.claims(ns)}?labelSelector=${encodeURIComponent('namzu.test/fleet=release-me')}`,
		)
		expect(deletes.sort()).toEqual(names.map((name) => `DELETE ${paths.claim(ns, name)}`))
		const live = (await listClaims(h.cluster, ns)).filter(
			(claim) => claim.metadata.deletionTimestamp === undefined,
		)
		expect(live.map((claim) => claim.metadata.name)).not.toContain(names[0])
		expect(await kept.exec('true')).toMatchObject({ exitCode: 0 })
	})

	it('rejects with the caller’s abort reason while the API server holds its LIST', async () => {
		const pause = h.cluster.faults.api.pause()
		try {
			const controller = new AbortController()
			const reason = new Error('caller gave up')
			setTimeout(() => controller.abort(reason), 300)
			const { error, elapsedMs } = await rejection(
				releaseKubernetesTaskSandboxes(h.faultedConfig(), {
					labelSelector: 'namzu.test/fleet=x',
					signal: controller.signal,
				}),
			)
			expect(error).toBe(reason)
			expect(elapsedMs).toBeLessThan(5_000)
		} finally {
			pause.resume()
		}
	})
})
