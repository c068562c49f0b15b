// The Kubernetes task backend against the local cluster harness, warm-pool path: a real API
// server, the real agent-sandbox controller and the process kubelet running our agent. Claims,
// the exact request log of a clean acquire, a controller refusal, the lease under API faults, a
// sandbox deleted under a run, and the fleet verbs (release by label, capacity).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	KUBERNETES_CLAIMANT_RBAC_RULES,
	KubernetesAcquireError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
	readKubernetesTaskCapacity,
	releaseKubernetesTaskSandboxes,
} from '../../../src/index.js'
import { boundSandboxName, type KubeObject, waitGone } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { findInChain, rejection } from './error-chain.js'
import { listClaims, poolName, sleep, useKubernetesHarness } from './kubernetes-harness.js'
import { type RecordingApiProxy, startRecordingApiProxy } from './recording-api-proxy.js'
import { bindServiceAccount } from './service-account.js'

const replicas = 3
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-warm',
	refillPoolAfterEach: true,
})
const open = h.open

let proxy: RecordingApiProxy

beforeAll(async () => {
	proxy = await startRecordingApiProxy(h.cluster.access)
	console.info(
		`cluster: Kubernetes ${h.cluster.versions.kubernetes}, agent-sandbox ${h.cluster.versions.agentSandbox}`,
	)
})

afterAll(async () => {
	await proxy?.close()
})

const liveClaims = async (): Promise<readonly KubeObject[]> =>
	(await listClaims(h.cluster, h.namespace)).filter(
		(claim) => claim.metadata.deletionTimestamp === undefined,
	)

/** `spec.lifecycle.shutdownTime` of a claim, as epoch ms (NaN when absent). */
function claimShutdownMs(claim: KubeObject): number {
	const lifecycle = claim.spec?.lifecycle
	const value =
		typeof lifecycle === 'object' && lifecycle !== null && 'shutdownTime' in lifecycle
			? lifecycle.shutdownTime
			: undefined
	return typeof value === 'string' ? Date.parse(value) : Number.NaN
}

function withoutQuery(line: string): string {
	return line.split('?')[0] ?? line
}

/** Consecutive repeats collapsed: readiness polls the claim as often as it needs to. */
function collapsed(lines: readonly string[]): string[] {
	return lines.filter((line, index) => index === 0 || lines[index - 1] !== line)
}

describe('Kubernetes task sandboxes from a warm pool', () => {
	it('claims a warm sandbox, runs a command in its pod as the deprivileged user, and destroy deletes the claim', async () => {
		const sandbox = await h.provider().create()
		open.push(sandbox)
		const claims = await liveClaims()
		expect(claims).toHaveLength(1)
		const claim = claims[0] as KubeObject
		expect(boundSandboxName(claim)).toBe(sandbox.id)
		// The pool named its sandbox; the id is that cluster name (`kubectl get sandbox <id>`).
		expect(sandbox.id).not.toBe(claim.metadata.name)
		const bound = await h.cluster.api.get<KubeObject>(paths.sandbox(h.namespace, sandbox.id))
		expect(bound.metadata.name).toBe(sandbox.id)
		expect(claim.spec).toMatchObject({
			warmPoolRef: { name: poolName },
			lifecycle: { shutdownPolicy: 'Delete' },
		})
		expect(claimShutdownMs(claim) - Date.now()).toBeGreaterThan(3_000_000)
		expect(claim.spec).not.toHaveProperty('env')
		expect(claim.spec).not.toHaveProperty('volumeClaimTemplates')

		const result = await sandbox.exec('sh', ['-c', 'id -u; grep NoNewPrivs /proc/self/status'])
		expect(result).toMatchObject({ exitCode: 0, timedOut: false })
		expect(result.stdout).toMatch(/^1000\nNoNewPrivs:\s+1\n$/)
		await sandbox.writeFile('hello.txt', 'from the host')
		expect((await sandbox.readFile('hello.txt')).toString()).toBe('from the host')
		expect('setNetworkPolicy' in sandbox).toBe(false)
		expect('spawnDetached' in sandbox).toBe(false)

		await sandbox.destroy()
		await sandbox.destroy()
		await waitGone(h.cluster.api, paths.claim(h.namespace, claim.metadata.name))
		await expect(sandbox.exec('true')).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
	})

	it('a clean warm acquire sends exactly POST claim, one watch of that claim opened beside the POST, one GET of the bound pod, one LIST of the network policies, and (the provider’s first create) one GET of the pool and one LIST of its pods; destroy one DELETE', async () => {
		proxy.clear()
		const token = h.cluster.access.token
		const sandbox = await h
			.provider({ access: { server: proxy.server, getToken: async () => token } })
			.create()
		open.push(sandbox)
		const acquireLog = [...proxy.requests]
		const claim = (await liveClaims())[0] as KubeObject
		const claimName = claim.metadata.name
		expect(claim.spec).toMatchObject({ warmPoolRef: { name: poolName } })
		const post = `POST ${paths.claims(h.namespace)}`
		const watchLine = `GET ${paths.claims(h.namespace)}`
		const podRead = `GET ${paths.pod(h.namespace, sandbox.id)}`
		// The agent-port ingress check's LIST, sent while the claim binds.
		const policies = `GET ${paths.networkPolicies(h.namespace)}`
		// The warm-pool roster: the pool's selector once, then its pods (alongside the POST).
		const roster = [`GET ${paths.pool(h.namespace, poolName)}`, `GET ${paths.pods(h.namespace)}`]
		const lines = acquireLog.map(withoutQuery)
		expect([...lines].sort()).toEqual([post, watchLine, podRead, policies, ...roster].sort())
		const at = (line: string) => lines.indexOf(line)
		// The watch is sent beside the POST (either may arrive first), the pod read after both.
		expect(at(post)).toBeLessThan(at(podRead))
		expect(at(watchLine)).toBeLessThan(at(podRead))
		expect(at(post)).toBeLessThan(at(policies))
		expect(at(roster[0] as string)).toBeLessThan(at(roster[1] as string))
		const podList = new URL(`http://x${acquireLog[at(roster[1] as string)]?.split(' ')[1] ?? ''}`)
		expect(podList.searchParams.get('labelSelector')).toMatch(
			/^agents\.x-k8s\.io\/warm-pool-sandbox=/,
		)
		const watch = new URL(`http://x${acquireLog[at(watchLine)]?.split(' ')[1] ?? ''}`).searchParams
		expect(watch.get('watch')).toBe('true')
		expect(watch.get('fieldSelector')).toBe(`metadata.name=${claimName}`)
		// No version: the server sends the claim's current state first, so a bind that lands before
		// the watch opens is not missed.
		expect(watch.get('resourceVersion')).toBeNull()
		expect(Number(watch.get('timeoutSeconds'))).toBeGreaterThan(0)
		proxy.clear()
		await sandbox.destroy()
		expect(proxy.requests.map(withoutQuery)).toEqual([
			`DELETE ${paths.claim(h.namespace, claimName)}`,
		])
	})

	it('a Role without watch on sandboxclaims still acquires: the refused watch falls back to polling the claim', async () => {
		const rules = KUBERNETES_CLAIMANT_RBAC_RULES.map((rule) => ({
			...rule,
			verbs: rule.verbs.filter((verb) => verb !== 'watch'),
		}))
		const token = await bindServiceAccount(h.cluster.api, h.namespace, 'no-watch', rules)
		proxy.clear()
		const sandbox = await h
			.provider({ access: { server: proxy.server, getToken: async () => token } })
			.create()
		open.push(sandbox)
		const claimName = (await liveClaims())[0]?.metadata.name ?? ''
		// The roster's reads and the policy LIST run beside the claim's own sequence.
		const beside = [
			`GET ${paths.pool(h.namespace, poolName)}`,
			`GET ${paths.pods(h.namespace)}`,
			`GET ${paths.networkPolicies(h.namespace)}`,
		]
		const lines = proxy.requests.map(withoutQuery)
		expect(lines.filter((line) => beside.includes(line)).sort()).toEqual([...beside].sort())
		const own = collapsed(lines.filter((line) => !beside.includes(line)))
		// The POST and, beside it, the watch (answered 403), in whichever order they arrived …
		expect(own.slice(0, 2).sort()).toEqual(
			[`POST ${paths.claims(h.namespace)}`, `GET ${paths.claims(h.namespace)}`].sort(),
		)
		// … so the claim is read until bound.
		expect(own.slice(2)).toEqual([
			`GET ${paths.claim(h.namespace, claimName)}`,
			`GET ${paths.pod(h.namespace, sandbox.id)}`,
		])
		expect(await sandbox.exec('true')).toMatchObject({ exitCode: 0 })
	})

	it('the guest learns its pod uid through the downward API, and the claim is never written after its POST', async () => {
		proxy.clear()
		const token = h.cluster.access.token
		const sandbox = await h
			.provider({ access: { server: proxy.server, getToken: async () => token } })
			.create()
		open.push(sandbox)
		const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
		const containers = (pod.spec?.containers ?? []) as Array<{ env?: unknown[] }>
		expect(containers[0]?.env).toContainEqual({
			name: 'NAMZU_AGENT_BIND_TOKEN',
			valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.uid' } },
		})
		// The probe ran over that token, so the guest accepted the uid the backend read.
		expect(await sandbox.exec('true')).toMatchObject({ exitCode: 0 })
		const writes = proxy.requests.map(withoutQuery).filter((line) => !line.startsWith('GET '))
		expect(writes).toEqual([`POST ${paths.claims(h.namespace)}`])
	})

	it('destroy() of a sandbox whose claim is already gone resolves: the DELETE answered 404 counts as released', async () => {
		proxy.clear()
		const token = h.cluster.access.token
		const sandbox = await h
			.provider({ access: { server: proxy.server, getToken: async () => token } })
			.create()
		open.push(sandbox)
		const claim = (await liveClaims())[0] as KubeObject
		const path = paths.claim(h.namespace, claim.metadata.name)
		await h.cluster.api.remove(path)
		await waitGone(h.cluster.api, path)
		proxy.clear()
		await expect(sandbox.destroy()).resolves.toBeUndefined()
		expect(proxy.requests.map(withoutQuery)).toEqual([`DELETE ${path}`])
		expect(await h.cluster.api.find(path)).toBeUndefined()
		expect(sandbox.status).toBe('destroyed')
	})

	it('a claim naming a missing warm pool is rejected as claim-rejected far inside the budget, and the claim is deleted', async () => {
		const readyTimeoutMs = 30_000
		const { error, elapsedMs } = await rejection(
			h.provider({ warmPoolName: 'no-such-pool', readyTimeoutMs }).create(),
		)
		console.info(`claim-rejected after ${Math.round(elapsedMs)} ms (budget ${readyTimeoutMs} ms)`)
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({
			reason: 'claim-rejected',
			retryable: false,
			controllerReason: 'WarmPoolNotFound',
		})
		expect((error as KubernetesAcquireError).controllerMessage).toContain('no-such-pool')
		expect(elapsedMs).toBeLessThan(readyTimeoutMs / 10)
		expect(await liveClaims()).toEqual([])
	})

	it('a lease renewal that fails twice and then succeeds keeps the sandbox past its first shutdownTime', async () => {
		const fault = h.cluster.faults.api.respondWith({
			status: 503,
			count: 2,
			match: { method: 'PATCH', pathIncludes: '/sandboxclaims/' },
		})
		const reported: Error[] = []
		const claimTtlSeconds = 6
		const sandbox = await h
			.provider({
				access: h.faultedConfig().access,
				claimTtlSeconds,
				onLeaseRenewalError: (error) => reported.push(error),
			})
			.create()
		open.push(sandbox)
		const claim = (await liveClaims())[0] as KubeObject
		const path = paths.claim(h.namespace, claim.metadata.name)
		const firstShutdown = claimShutdownMs(claim)
		expect(firstShutdown).not.toBeNaN()

		await waitFor(
			'a renewed shutdownTime',
			async () => {
				const current = await h.cluster.api.get<KubeObject>(path)
				const at = claimShutdownMs(current)
				return at > firstShutdown ? at : undefined
			},
			{ timeoutMs: 20_000, intervalMs: 100 },
		)
		expect(fault.hits).toBe(2)
		expect(reported).toHaveLength(2)
		// Past the first shutdownTime the controller would have deleted an unrenewed claim.
		await sleep(Math.max(0, firstShutdown - Date.now()) + 1_500)
		expect(await h.cluster.api.find(path)).toBeDefined()
		expect(await sandbox.exec('echo', ['still here'])).toMatchObject({
			exitCode: 0,
			stdout: 'still here\n',
		})
	})

	it('a sandbox whose claim is deleted under a running command ends that command, and later calls throw KubernetesSandboxGoneError', async () => {
		const sandbox = await h.provider({ claimTtlSeconds: 4 }).create()
		open.push(sandbox)
		const claim = (await liveClaims())[0] as KubeObject
		const running = sandbox.exec('sleep', ['60']).then(
			(result) => ({ result }),
			(error: unknown) => ({ error }),
		)
		await sleep(300)
		await h.cluster.api.remove(paths.claim(h.namespace, claim.metadata.name))
		const ended = await running
		if ('result' in ended) expect(ended.result.exitCode).not.toBe(0)
		const gone = await waitFor(
			'KubernetesSandboxGoneError from a later call',
			async () => {
				const outcome = await sandbox.exec('true').then(
					() => undefined,
					(error: unknown) => error,
				)
				return findInChain(outcome, KubernetesSandboxGoneError)
			},
			{ timeoutMs: 20_000, intervalMs: 250 },
		)
		expect(gone).toBeInstanceOf(KubernetesSandboxGoneError)
		await expect(sandbox.readFile('anything')).rejects.toBeInstanceOf(KubernetesSandboxGoneError)
	})

	it('claimLabels land on claims only; release deletes the claims a selector names; capacity reads the pool', async () => {
		const hostA = { 'namzu.test/host': 'host-a' }
		const a1 = await h.provider({ claimLabels: hostA }).create()
		const a2 = await h.provider({ claimLabels: hostA }).create()
		const b = await h.provider({ claimLabels: { 'namzu.test/host': 'host-b' } }).create()
		open.push(a1, a2, b)
		const claims = await liveClaims()
		expect(claims.map((claim) => claim.metadata.labels?.['namzu.test/host']).sort()).toEqual([
			'host-a',
			'host-a',
			'host-b',
		])
		const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, a1.id))
		expect(pod.metadata.labels?.['namzu.test/host']).toBeUndefined()

		const capacity = await readKubernetesTaskCapacity(h.config())
		expect(capacity.warmPool.desired).toBe(replicas)
		expect(capacity.warmPool.ready).toBeGreaterThanOrEqual(0)
		expect(capacity.warmPool.ready).toBeLessThanOrEqual(replicas)
		expect(capacity.activeClaims).toBe(3)
		expect(capacity.pendingPods).toBeGreaterThanOrEqual(0)

		proxy.clear()
		const token = h.cluster.access.token
		const recorded = h.config({ access: { server: proxy.server, getToken: async () => token } })
		await expect(releaseKubernetesTaskSandboxes(recorded, { labelSelector: '' })).rejects.toThrow()
		expect(proxy.requests).toEqual([])

		const released = await releaseKubernetesTaskSandboxes(h.config(), {
			labelSelector: 'namzu.test/host=host-a',
		})
		const hostAClaims = claims
			.filter((claim) => claim.metadata.labels?.['namzu.test/host'] === 'host-a')
			.map((claim) => claim.metadata.name)
			.sort()
		expect(released.deleted).toBe(2)
		expect([...released.names].sort()).toEqual(hostAClaims)
		const left = await liveClaims()
		expect(left.map((claim) => claim.metadata.labels?.['namzu.test/host'])).toEqual(['host-b'])
		// Releasing under a handle: its destroy() still resolves (an object already gone is released).
		await a1.destroy()
		await a2.destroy()
	})
})
