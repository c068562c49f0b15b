// Smoke test of the real agent-sandbox controller on the local control plane (or a real cluster
// with NAMZU_TEST_KUBECONFIG): warm pool → claim binding → cascade on delete → suspend/resume onto
// the same workspace. Each step reads what the controller itself wrote.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	boundSandboxName,
	condition,
	controllerOf,
	createTestNamespace,
	isReady,
	type KubeObject,
	listItems,
	waitGone,
	waitObject,
} from './cluster-objects.js'
import { type ClusterUnderTest, clusterUnderTest } from './external-cluster.js'
import { execInPod } from './pod-agent.js'
import { agentPort, paths, sandboxClaim, sandboxTemplate, warmPool } from './sandbox-fixtures.js'
import { waitFor } from './wait-for.js'

const template = 'agent-template'
const pool = 'agent-pool'

let cluster: ClusterUnderTest
let ns: string

beforeAll(async () => {
	cluster = await clusterUnderTest()
	ns = await createTestNamespace(cluster.api, 'smoke')
	await cluster.api.create(paths.templates(ns), sandboxTemplate(template))
	await cluster.api.create(paths.pools(ns), warmPool(pool, template, 2))
})

afterAll(async () => {
	if (cluster === undefined) return
	if (ns !== undefined) await cluster.api.remove(paths.namespace(ns)).catch(() => {})
	await cluster.stop()
})

async function poolSandboxes(): Promise<KubeObject[]> {
	const sandboxes = await listItems(cluster.api, paths.sandboxes(ns))
	return sandboxes.filter((sandbox) => {
		const owner = controllerOf(sandbox)
		return owner?.kind === 'SandboxWarmPool' && owner.name === pool
	})
}

async function claimAndWait(name: string): Promise<{ claim: KubeObject; sandbox: string }> {
	await cluster.api.create(paths.claims(ns), sandboxClaim(name, pool))
	const claim = await waitObject(
		cluster.api,
		paths.claim(ns, name),
		`claim ${name} bound and Ready`,
		(object) => boundSandboxName(object) !== undefined && isReady(object),
		{ timeoutMs: 90_000 },
	)
	return { claim, sandbox: boundSandboxName(claim) ?? '' }
}

function exec(pod: KubeObject, script: string) {
	return execInPod(podTarget(pod), script, {
		assertRouted: (address) => cluster.kubelet?.assertPodRoute(address) ?? Promise.resolve(),
	})
}

function podTarget(pod: KubeObject): { address: string; port: number; token: string } {
	const address = pod.status?.podIP
	if (typeof address !== 'string') throw new Error(`pod ${pod.metadata.name} has no podIP`)
	return { address, port: agentPort, token: pod.metadata.uid }
}

describe('agent-sandbox controller against a real control plane', () => {
	it('names the Kubernetes and agent-sandbox versions it runs against', async () => {
		console.info(
			`cluster: Kubernetes ${cluster.versions.kubernetes}, agent-sandbox ${cluster.versions.agentSandbox}`,
		)
		const reported = await cluster.api.get<{ gitVersion: string }>('/version')
		expect(reported.gitVersion).toBe(cluster.versions.kubernetes)
		expect(cluster.versions.agentSandbox).toMatch(/^v\d+\.\d+\.\d+/)
	})

	it('fills a warm pool of two from a SandboxTemplate and reports both ready', async () => {
		const filled = await waitObject(
			cluster.api,
			paths.pool(ns, pool),
			'warm pool readyReplicas == 2',
			(object) => object.status?.readyReplicas === 2,
			{ timeoutMs: 120_000 },
		)
		expect(filled.status?.replicas).toBe(2)
		const members = await poolSandboxes()
		expect(members).toHaveLength(2)
		for (const sandbox of members) {
			expect(sandbox.metadata.name.startsWith(`${pool}-`)).toBe(true)
			expect(condition(sandbox, 'Ready')).toMatchObject({
				status: 'True',
				reason: 'DependenciesReady',
			})
			const pod = await cluster.api.get<KubeObject>(paths.pod(ns, sandbox.metadata.name))
			expect(pod.status?.phase).toBe('Running')
			expect(sandbox.status?.podIPs).toEqual([pod.status?.podIP])
		}
	})

	it('binds a claim to an already-running warm sandbox, named in status.sandbox.name', async () => {
		const warm = new Set((await poolSandboxes()).map((sandbox) => sandbox.metadata.name))
		const { claim, sandbox } = await claimAndWait('claim-warm')
		expect(warm.has(sandbox)).toBe(true)
		expect(sandbox).not.toBe(claim.metadata.name)
		const bound = await cluster.api.get<KubeObject>(paths.sandbox(ns, sandbox))
		expect(controllerOf(bound)).toMatchObject({ kind: 'SandboxClaim', name: 'claim-warm' })
		expect(bound.metadata.labels?.['agents.x-k8s.io/launch-type']).toBe('warm')
		// The pool replenishes to two unclaimed members.
		await waitFor(
			'pool replenished',
			async () => ((await poolSandboxes()).length === 2 ? true : undefined),
			{ timeoutMs: 60_000 },
		)
	})

	it('cascades a claim deletion to its Sandbox, Pod, Service and PVC through the garbage collector', async () => {
		const sandbox = boundSandboxName(
			await cluster.api.get<KubeObject>(paths.claim(ns, 'claim-warm')),
		)
		if (sandbox === undefined) throw new Error('claim-warm is not bound')
		const pvc = `workspace-${sandbox}`
		expect(await cluster.api.find(paths.pod(ns, sandbox))).toBeDefined()
		expect(await cluster.api.find(paths.service(ns, sandbox))).toBeDefined()
		expect(await cluster.api.find(paths.pvc(ns, pvc))).toBeDefined()

		await cluster.api.remove(paths.claim(ns, 'claim-warm'))

		await waitGone(cluster.api, paths.claim(ns, 'claim-warm'))
		await waitGone(cluster.api, paths.sandbox(ns, sandbox))
		await waitGone(cluster.api, paths.pod(ns, sandbox), { timeoutMs: 90_000 })
		await waitGone(cluster.api, paths.service(ns, sandbox))
		await waitGone(cluster.api, paths.pvc(ns, pvc), { timeoutMs: 90_000 })
	})

	it('suspending deletes the pod and keeps the workspace; resuming runs a new pod on the same data', async () => {
		const { sandbox } = await claimAndWait('claim-suspend')
		const pvc = `workspace-${sandbox}`
		const first = await cluster.api.get<KubeObject>(paths.pod(ns, sandbox))
		const written = await exec(
			first,
			'echo kept-across-suspend > /workspace/marker && cat /workspace/marker',
		)
		expect(written).toMatchObject({ exitCode: 0, stdout: 'kept-across-suspend\n' })

		await cluster.api.patch(
			paths.sandbox(ns, sandbox),
			{ spec: { operatingMode: 'Suspended' } },
			'merge',
		)
		await waitGone(cluster.api, paths.pod(ns, sandbox), { timeoutMs: 90_000 })
		const suspended = await waitObject(
			cluster.api,
			paths.sandbox(ns, sandbox),
			'Sandbox Ready=False/SandboxSuspended with its pod addresses cleared',
			// The controller writes the condition and clears podIPs in separate status updates.
			(object) =>
				condition(object, 'Ready')?.reason === 'SandboxSuspended' &&
				object.status?.podIPs === undefined,
		)
		expect(condition(suspended, 'Ready')?.status).toBe('False')
		expect(suspended.status?.podIPs).toBeUndefined()
		expect(await cluster.api.find(paths.pvc(ns, pvc))).toBeDefined()
		if (cluster.kubelet) {
			// The claim's directory on the node outlives the pod, marker included.
			const dir = await cluster.kubelet.pvcDirectory({ namespace: ns, name: pvc })
			expect(dir).toBeDefined()
			expect(readFileSync(join(dir ?? '', 'marker'), 'utf8')).toBe('kept-across-suspend\n')
		}

		await cluster.api.patch(
			paths.sandbox(ns, sandbox),
			{ spec: { operatingMode: 'Running' } },
			'merge',
		)
		const resumed = await waitObject(
			cluster.api,
			paths.sandbox(ns, sandbox),
			'Sandbox Ready again after resume',
			(object) => isReady(object),
			{ timeoutMs: 90_000 },
		)
		const second = await cluster.api.get<KubeObject>(paths.pod(ns, sandbox))
		expect(second.metadata.uid).not.toBe(first.metadata.uid)
		expect(resumed.status?.podIPs).toEqual([second.status?.podIP])
		const read = await waitFor('agent in the resumed pod answers', () =>
			exec(second, 'cat /workspace/marker'),
		)
		expect(read).toMatchObject({ exitCode: 0, stdout: 'kept-across-suspend\n' })
	})
})
