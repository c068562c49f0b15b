/**
 * The network and process layer of the process kubelet, without an API server: real network
 * namespaces on a real harness bridge, the real agent bundle under real bubblewrap, probed over
 * TCP on the pod address.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { HarnessNetwork } from './harness-network.js'
import { DEFAULT_BWRAP_PATH, readRootEntries } from './host-image.js'
import type { Container, Pod } from './kube-types.js'
import { type PodAgentTarget, podExec } from './pod-agent-client.js'
import { PodNetworkAllocator } from './pod-network.js'
import { PodRuntime } from './pod-runtime.js'
import type { PodSnapshot } from './pod-status.js'

const PORT = 1024
let network: HarnessNetwork
let allocator: PodNetworkAllocator
let dir: string
let claimDir: string
const runtimes: PodRuntime[] = []
let podCounter = 0

function agentContainer(extra: Partial<Container> = {}): Container {
	return {
		name: 'agent',
		image: 'namzu/agent:test',
		env: [
			{ name: 'NAMZU_AGENT_TCP_PORT', value: String(PORT) },
			{ name: 'NAMZU_AGENT_BIND_TOKEN', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
			{ name: 'NAMZU_SANDBOX_WORKSPACE', value: '/workspace' },
			{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
			{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
		],
		volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }],
		securityContext: {
			runAsUser: 1000,
			runAsGroup: 1000,
			allowPrivilegeEscalation: false,
			capabilities: { drop: ['ALL'] },
		},
		...extra,
	}
}

function pod(container: Container = agentContainer(), spec: Partial<Pod['spec']> = {}): Pod {
	podCounter++
	return {
		metadata: { name: `pod-${podCounter}`, namespace: 'ns1', uid: `uid-${podCounter}-0000-1111` },
		spec: {
			containers: [container],
			volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: 'ws' } }],
			...spec,
		},
	}
}

async function start(p: Pod): Promise<PodRuntime> {
	const runtime = await PodRuntime.start(p, {
		network,
		allocator,
		podDir: join(dir, 'pods', p.metadata.uid ?? ''),
		agentBundlePath: agentBundlePath(),
		nodePath: process.execPath,
		bwrapPath: DEFAULT_BWRAP_PATH,
		rootEntries: await readRootEntries(),
		claimVolume: async () => ({ ok: true, kind: 'directory', path: claimDir }),
		onChange: () => undefined,
	})
	runtimes.push(runtime)
	return runtime
}

async function until(
	runtime: PodRuntime,
	predicate: (snapshot: PodSnapshot) => boolean,
	timeoutMs = 15_000,
): Promise<PodSnapshot> {
	const deadline = Date.now() + timeoutMs
	for (;;) {
		const snapshot = runtime.snapshot()
		if (predicate(snapshot)) return snapshot
		if (Date.now() > deadline) throw new Error(`timed out; last ${JSON.stringify(snapshot)}`)
		await new Promise((resolve) => setTimeout(resolve, 25))
	}
}

const ready = (s: PodSnapshot) => s.containers.every((c) => c.ready && c.phase.kind === 'running')

function target(runtime: PodRuntime): PodAgentTarget {
	return {
		address: runtime.address ?? '',
		port: PORT,
		token: runtime.pod.metadata.uid ?? '',
		assertRouted: (address) => network.assertRouted(address),
	}
}

beforeAll(async () => {
	network = await HarnessNetwork.start()
	allocator = new PodNetworkAllocator(network)
	dir = await mkdtemp(join(tmpdir(), 'namzu-kubelet-runtime-'))
	claimDir = join(dir, 'claim')
	await import('node:fs/promises').then((fs) => fs.mkdir(claimDir))
})

afterAll(async () => {
	await Promise.all(runtimes.map((runtime) => runtime.release()))
	await network?.stop()
	await rm(dir, { recursive: true, force: true })
})

describe('pod runtime (network namespace + bubblewrap, no API server)', () => {
	it('reports Ready only once the agent answers healthz on the pod address, with the downward-API env, a non-root identity, no privileges and the claim at /workspace', async () => {
		const runtime = await start(pod())
		const first = runtime.snapshot()
		expect(first.containers[0]?.ready).toBe(false)
		expect(first.podIP).toMatch(
			new RegExp(`^${network.plan.prefix.replaceAll('.', '\\.')}\\.\\d+$`),
		)
		await until(runtime, ready)
		const t = target(runtime)
		const env = await podExec(t, 'echo "$POD_NAME $POD_IP $(id -u):$(id -g) $(hostname)"')
		// The agent scrubs NAMZU_* from children; POD_* come from the downward API.
		expect(env.stdout.trim()).toBe(
			`${runtime.pod.metadata.name} ${runtime.address} 1000:1000 ${runtime.pod.metadata.name}`,
		)
		const status = await podExec(
			t,
			'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|NoNewPrivs)" /proc/self/status',
		)
		expect(status.stdout).toMatch(/CapEff:\s+0000000000000000/)
		expect(status.stdout).toMatch(/CapBnd:\s+0000000000000000/)
		expect(status.stdout).toMatch(/NoNewPrivs:\s+1/)
		await podExec(t, 'echo persisted > /workspace/from-pod.txt')
		expect(await readFile(join(claimDir, 'from-pod.txt'), 'utf8')).toBe('persisted\n')
		// Only the pod's own /24 is routed inside: no default route, nothing can leave.
		const routes = await podExec(t, 'cat /proc/net/route')
		expect(routes.stdout).not.toMatch(/^eth0\s+00000000\s/m)
	})

	it('restarts a killed agent in place: same address, a new process, restartCount + 1 and the old run in lastState', async () => {
		const runtime = await start(pod())
		const before = await until(runtime, ready)
		const firstId =
			before.containers[0]?.phase.kind === 'running' ? before.containers[0].phase.containerID : ''
		const pid1 = await runtime.runner()?.process?.pid1()
		expect(pid1).toBeTypeOf('number')
		process.kill(pid1 ?? -1, 'SIGKILL')
		const after = await until(
			runtime,
			(s) => ready(s) && (s.containers[0]?.restartCount ?? 0) === 1,
		)
		const container = after.containers[0]
		expect(after.podIP).toBe(before.podIP)
		expect(container?.lastTerminated).toMatchObject({
			exitCode: 137,
			reason: 'Error',
			containerID: firstId,
		})
		expect(container?.phase.kind === 'running' && container.phase.containerID).not.toBe(firstId)
	})

	it('turns a frozen agent unready and ready again once thawed', async () => {
		const runtime = await start(pod())
		await until(runtime, ready)
		const thaw = await runtime.runner()?.process?.freeze()
		await until(runtime, (s) => s.containers[0]?.ready === false)
		expect(runtime.snapshot().containers[0]?.phase.kind).toBe('running')
		await thaw?.()
		await until(runtime, ready)
	})

	it('gives a container that traps SIGTERM its grace period after the preStop hook, then SIGKILLs it', async () => {
		const events = join(claimDir, 'events-trap')
		const container = agentContainer({
			command: ['/bin/sh', '-c'],
			args: [
				`trap 'echo term >> /workspace/events-trap' TERM; node "$(NAMZU_KUBELET_AGENT_BUNDLE)" & while :; do sleep 0.05; done`,
			],
			lifecycle: {
				preStop: { exec: { command: ['/bin/sh', '-c', 'echo prestop >> /workspace/events-trap'] } },
			},
		})
		const runtime = await start(pod(container, { restartPolicy: 'Always' }))
		await until(runtime, ready)
		const began = Date.now()
		await runtime.terminate(1)
		expect(Date.now() - began).toBeGreaterThanOrEqual(1000)
		const snapshot = runtime.snapshot()
		expect(snapshot.finished).toBe(true)
		expect(snapshot.containers[0]?.phase).toMatchObject({ kind: 'terminated', exitCode: 137 })
		expect((await readFile(events, 'utf8')).split('\n').filter(Boolean)).toEqual([
			'prestop',
			'term',
		])
	})

	it('stops an agent that honours SIGTERM without waiting out the grace period, exit code 0', async () => {
		const runtime = await start(pod(agentContainer(), { restartPolicy: 'Always' }))
		await until(runtime, ready)
		await runtime.terminate(20)
		const snapshot = runtime.snapshot()
		expect(snapshot.finished).toBe(true)
		expect(snapshot.containers[0]?.phase).toMatchObject({
			kind: 'terminated',
			exitCode: 0,
			reason: 'Completed',
		})
	})

	it('refuses runAsNonRoot for a root process, and reports ErrImagePull instead of starting', async () => {
		const refused = await start(pod(agentContainer({ securityContext: { runAsNonRoot: true } })))
		const waiting = await until(
			refused,
			(s) =>
				s.containers[0]?.phase.kind === 'waiting' &&
				s.containers[0].phase.reason !== 'ContainerCreating',
		)
		expect(waiting.containers[0]?.phase).toMatchObject({
			reason: 'CreateContainerConfigError',
			message: 'container has runAsNonRoot and image will run as root',
		})
		const pulled = await start(pod())
		await until(pulled, ready)
		await pulled.runner()?.failImagePull()
		const failed = await until(pulled, (s) => s.containers[0]?.phase.kind === 'waiting')
		expect(failed.containers[0]?.phase).toMatchObject({ reason: 'ErrImagePull' })
		expect(pulled.runner()?.process).toBeUndefined()
	})

	it('removes the pod namespace and its veth on release, and the bridge on stop', async () => {
		const runtime = await start(pod())
		await until(runtime, ready)
		const netns = runtime.netns ?? ''
		expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).toContain(netns)
		await runtime.release()
		expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(netns)
		expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).not.toContain(
			`${network.plan.namePrefix}h${netns.split('-p')[1]}`,
		)
		await expect(stat(join(dir, 'pods', runtime.pod.metadata.uid ?? ''))).rejects.toThrow()
	})
})
