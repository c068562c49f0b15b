/**
 * The process kubelet against the real control plane (`startTestCluster()`): node registration,
 * binding, truthful status, in-place restarts, graceful deletion with preStop, PVC directories, and
 * every pod-level fault. Run by `npm run test:cluster` (vitest.cluster.config.ts).
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestCluster, type TestCluster } from '../test-cluster.js'
import { isStatus, KubeClient } from './kube-client.js'
import type { Container, ContainerStatus, PersistentVolumeClaim, Pod } from './kube-types.js'
import { podExec } from './pod-agent-client.js'

const PORT = 7070
let cluster: TestCluster
let client: KubeClient
let ns: string

async function until<T>(
	what: string,
	probe: () => Promise<T | undefined>,
	timeoutMs = 60_000,
): Promise<T> {
	const deadline = Date.now() + timeoutMs
	let last: unknown
	for (;;) {
		try {
			const value = await probe()
			if (value !== undefined) return value
		} catch (error) {
			last = error
		}
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${String(last)}`)
		await new Promise((resolve) => setTimeout(resolve, 100))
	}
}

const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`
const pvcPath = (name: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`

async function find<T>(path: string): Promise<T | undefined> {
	try {
		return await client.get<T>(path)
	} catch (error) {
		if (isStatus(error, 404)) return undefined
		throw error
	}
}

function ready(pod: Pod | undefined): boolean {
	return pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
}

function agent(extra: Partial<Container> = {}): Container {
	return {
		name: 'agent',
		image: 'namzu.local/sandbox-agent:test',
		ports: [{ containerPort: PORT, name: 'agent' }],
		env: [
			{ name: 'NAMZU_AGENT_TCP_PORT', value: String(PORT) },
			{ name: 'NAMZU_AGENT_BIND_TOKEN', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
			{ name: 'NAMZU_SANDBOX_WORKSPACE', value: '/workspace' },
			{ name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
		],
		volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
		securityContext: {
			runAsNonRoot: true,
			runAsUser: 1000,
			runAsGroup: 1000,
			allowPrivilegeEscalation: false,
			capabilities: { drop: ['ALL'] },
		},
		...extra,
	}
}

async function createClaim(name: string): Promise<PersistentVolumeClaim> {
	return client.post(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
		apiVersion: 'v1',
		kind: 'PersistentVolumeClaim',
		metadata: { name },
		spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
	})
}

async function createPod(
	name: string,
	claim: string,
	container = agent(),
	grace = 5,
): Promise<Pod> {
	return client.post(`/api/v1/namespaces/${ns}/pods`, {
		apiVersion: 'v1',
		kind: 'Pod',
		metadata: { name },
		spec: {
			terminationGracePeriodSeconds: grace,
			automountServiceAccountToken: false,
			containers: [container],
			volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: claim } }],
		},
	})
}

function agentStatus(pod: Pod | undefined): ContainerStatus | undefined {
	return pod?.status?.containerStatuses?.[0]
}

function target(pod: Pod) {
	return {
		address: pod.status?.podIP ?? '',
		port: PORT,
		token: pod.metadata.uid ?? '',
		assertRouted: (address: string) => cluster.kubelet.assertPodRoute(address),
	}
}

beforeAll(async () => {
	cluster = await startTestCluster()
	client = new KubeClient(cluster.access)
	ns = `kubelet-${process.pid.toString(36)}${Math.random().toString(36).slice(2, 6)}`
	await client.post('/api/v1/namespaces', {
		apiVersion: 'v1',
		kind: 'Namespace',
		metadata: { name: ns },
	})
	await until('the default ServiceAccount', () =>
		find(`/api/v1/namespaces/${ns}/serviceaccounts/default`),
	)
})

afterAll(async () => {
	client?.close()
	await cluster?.stop()
})

describe('process kubelet on the real control plane', () => {
	it('registers a Ready node and renews its lease', async () => {
		const node = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
			`/api/v1/nodes/${cluster.kubelet.nodeName}`,
		)
		expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True')
		const lease = await client.get<{ spec?: { holderIdentity?: string } }>(
			`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${cluster.kubelet.nodeName}`,
		)
		expect(lease.spec?.holderIdentity).toBe(cluster.kubelet.nodeName)
	})

	it('binds an unscheduled pod, reports it Running with its pod IP and Ready only once the agent answers, and binds its claim to a directory', async () => {
		await createClaim('ws-a')
		const created = await createPod('agent-a', 'ws-a')
		expect(created.spec.nodeName ?? '').toBe('')
		const observed: string[] = []
		const pod = await until('agent-a Ready', async () => {
			const p = await find<Pod>(podPath('agent-a'))
			const step = `${p?.status?.phase}/${ready(p)}`
			if (observed.at(-1) !== step) observed.push(step)
			return ready(p) ? p : undefined
		})
		expect(observed.at(-1)).toBe('Running/true')
		expect(observed).not.toContain('Pending/true')
		expect(pod.spec.nodeName).toBe(cluster.kubelet.nodeName)
		expect(pod.status?.podIP).toMatch(/^10\.244\.\d+\.\d+$/)
		expect(pod.status?.podIPs).toEqual([{ ip: pod.status?.podIP }])
		expect(pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True')
		expect(agentStatus(pod)).toMatchObject({ ready: true, started: true, restartCount: 0 })
		const claim = await client.get<PersistentVolumeClaim>(pvcPath('ws-a'))
		expect(claim.status?.phase).toBe('Bound')
		const dir = await cluster.kubelet.pvcDirectory({ namespace: ns, name: 'ws-a' })
		expect(dir).toContain(claim.metadata.uid ?? '-')
		const out = await podExec(
			target(pod),
			'echo "$MY_NAMESPACE $(id -u)" | tee /workspace/hello.txt',
		)
		expect(out.stdout.trim()).toBe(`${ns} 1000`)
		expect(await readFile(`${dir}/hello.txt`, 'utf8')).toBe(`${ns} 1000\n`)
	})

	it('restarts a killed agent in place: same uid and address, restartCount 1, the old run in lastState', async () => {
		const before = await client.get<Pod>(podPath('agent-a'))
		await cluster.faults.pods.killAgent({ namespace: ns, name: 'agent-a' })
		const after = await until('agent-a restarted and Ready', async () => {
			const p = await find<Pod>(podPath('agent-a'))
			return ready(p) && agentStatus(p)?.restartCount === 1 ? p : undefined
		})
		expect(after.metadata.uid).toBe(before.metadata.uid)
		expect(after.status?.podIP).toBe(before.status?.podIP)
		expect(agentStatus(after)?.lastState.terminated).toMatchObject({
			exitCode: 137,
			reason: 'Error',
		})
		expect(agentStatus(after)?.containerID).not.toBe(agentStatus(before)?.containerID)
	})

	it('reports a frozen agent not Ready until it is thawed', async () => {
		const thaw = await cluster.faults.pods.freezeAgent({ namespace: ns, name: 'agent-a' })
		await until('agent-a unready', async () => {
			const p = await find<Pod>(podPath('agent-a'))
			return ready(p) ? undefined : p
		})
		await thaw()
		await until('agent-a Ready again', async () => {
			const p = await find<Pod>(podPath('agent-a'))
			return ready(p) ? p : undefined
		})
	})

	it('runs the preStop hook and gives a SIGTERM-trapping container its grace period before the final delete; the claim directory outlives the pod', async () => {
		const trap = agent({
			command: ['/bin/sh', '-c'],
			args: [
				`trap 'echo term >> /workspace/events' TERM; node "$(NAMZU_KUBELET_AGENT_BUNDLE)" & while :; do sleep 0.05; done`,
			],
			lifecycle: {
				preStop: { exec: { command: ['/bin/sh', '-c', 'echo prestop >> /workspace/events'] } },
			},
		})
		await createPod('traps-term', 'ws-a', trap, 3)
		await until('traps-term Ready', async () => {
			const p = await find<Pod>(podPath('traps-term'))
			return ready(p) ? p : undefined
		})
		const deletedAt = Date.now()
		await client.delete(podPath('traps-term'))
		await new Promise((resolve) => setTimeout(resolve, 1_500))
		const midway = await find<Pod>(podPath('traps-term'))
		expect(midway?.metadata.deletionTimestamp).toBeDefined()
		expect(agentStatus(midway)?.state.running).toBeDefined()
		await until('traps-term gone', async () =>
			(await find(podPath('traps-term'))) ? undefined : true,
		)
		expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(3_000)
		const dir = (await cluster.kubelet.pvcDirectory({ namespace: ns, name: 'ws-a' })) ?? ''
		expect((await readFile(`${dir}/events`, 'utf8')).split('\n').filter(Boolean)).toEqual([
			'prestop',
			'term',
		])
	})

	it('removes the claim directory once the claim is deleted and no pod uses it', async () => {
		const dir = (await cluster.kubelet.pvcDirectory({ namespace: ns, name: 'ws-a' })) ?? ''
		await client.delete(podPath('agent-a'))
		await until('agent-a gone', async () => ((await find(podPath('agent-a'))) ? undefined : true))
		expect(existsSync(`${dir}/hello.txt`)).toBe(true)
		await client.delete(pvcPath('ws-a'))
		await until('the claim directory removed', async () => (existsSync(dir) ? undefined : true))
	})

	it('never binds a pod marked unschedulable and reports PodScheduled=False/Unschedulable', async () => {
		await cluster.faults.pods.markUnschedulable({ namespace: ns, name: 'nowhere' })
		await createClaim('ws-b')
		await createPod('nowhere', 'ws-b')
		const pod = await until('nowhere Unschedulable', async () => {
			const p = await find<Pod>(podPath('nowhere'))
			const scheduled = p?.status?.conditions?.find((c) => c.type === 'PodScheduled')
			return scheduled?.reason === 'Unschedulable' ? p : undefined
		})
		expect(pod.spec.nodeName ?? '').toBe('')
		expect(pod.status?.phase).toBe('Pending')
		expect(pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('False')
	})

	it('reports ErrImagePull instead of starting the container', async () => {
		await cluster.faults.pods.reportImagePullError({ namespace: ns, name: 'no-image' })
		await createPod('no-image', 'ws-b')
		const pod = await until('no-image ErrImagePull', async () => {
			const p = await find<Pod>(podPath('no-image'))
			return agentStatus(p)?.state.waiting?.reason === 'ErrImagePull' ? p : undefined
		})
		expect(pod.status?.phase).toBe('Pending')
		expect(ready(pod)).toBe(false)
		expect(agentStatus(pod)?.restartCount).toBe(0)
	})
})
