/**
 * Block-mode claims on the process kubelet, against the real control plane and the real
 * agent-sandbox controller: a `Sandbox` whose workspace claim is `volumeMode: Block` gets a loop
 * device (ext4, mounted at the agent's workspace) that survives suspend and resume; a second
 * claim's device never shows the first's bytes; the guest sees no loop device but its own; a
 * claim over the node's cap is refused by name; deleting the Sandbox detaches the device and
 * removes its backing file. Run by `npm run test:cluster`.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createTestNamespace,
	isReady,
	type KubeObject,
	waitGone,
	waitObject,
} from '../cluster-objects.js'
import { execInPod } from '../pod-agent.js'
import { agentPodSpec, agentPort, directSandbox, paths } from '../sandbox-fixtures.js'
import { startTestCluster, type TestCluster } from '../test-cluster.js'
import { waitFor } from '../wait-for.js'
import { LOOP_REGISTRY_DIR, loopsBackedBy } from './loop-devices.js'
import { BLOCK_DISK_FILE } from './pvc-store.js'

let cluster: TestCluster
let ns: string

beforeAll(async () => {
	cluster = await startTestCluster()
	ns = await createTestNamespace(cluster.api, 'block')
})

afterAll(async () => {
	if (cluster === undefined) return
	if (ns !== undefined) await cluster.api.remove(paths.namespace(ns)).catch(() => {})
	await cluster.stop()
})

function exec(pod: KubeObject, script: string) {
	const address = pod.status?.podIP
	if (typeof address !== 'string') throw new Error(`pod ${pod.metadata.name} has no podIP`)
	return execInPod({ address, port: agentPort, token: pod.metadata.uid }, script, {
		assertRouted: (target) => cluster.kubelet.assertPodRoute(target),
		timeoutMs: 30_000,
	})
}

async function runningSandbox(name: string): Promise<KubeObject> {
	await waitObject(cluster.api, paths.sandbox(ns, name), `Sandbox ${name} Ready`, isReady, {
		timeoutMs: 90_000,
	})
	return cluster.api.get<KubeObject>(paths.pod(ns, name))
}

async function createBlockSandbox(name: string): Promise<KubeObject> {
	await cluster.api.create(paths.sandboxes(ns), directSandbox(name, { workspace: 'block' }))
	return runningSandbox(name)
}

const claimOf = (sandbox: string) => ({ namespace: ns, name: `workspace-${sandbox}` })

async function diskFile(sandbox: string): Promise<string> {
	const dir = await cluster.kubelet.pvcDirectory(claimOf(sandbox))
	if (dir === undefined) throw new Error(`no claim for ${sandbox}`)
	return join(dir, BLOCK_DISK_FILE)
}

function majorMinor(device: string): string {
	const rdev = statSync(device).rdev
	// Linux dev_t: major in bits 8–19, minor in bits 0–7 and 20–31.
	const major = (rdev >> 8) & 0xfff
	const minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00)
	return `${major.toString(16)}:${minor.toString(16)}`
}

async function createBlockClaim(name: string, storage = '64Mi'): Promise<void> {
	await cluster.api.create(paths.pvcs(ns), {
		apiVersion: 'v1',
		kind: 'PersistentVolumeClaim',
		metadata: { name },
		spec: {
			accessModes: ['ReadWriteOnce'],
			volumeMode: 'Block',
			resources: { requests: { storage } },
		},
	})
}

/** The fixture's agent pod on claim `claim`, its container changed by `edit`. */
async function createAgentPod(
	name: string,
	claim: string,
	edit: (container: Record<string, unknown>) => Record<string, unknown> = (c) => c,
): Promise<void> {
	const spec = agentPodSpec({ workspace: 'block' })
	const containers = (spec.containers as Record<string, unknown>[]).map(edit)
	await cluster.api.create(paths.pods(ns), {
		apiVersion: 'v1',
		kind: 'Pod',
		metadata: { name },
		spec: {
			...spec,
			containers,
			volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: claim } }],
		},
	})
}

function withWorkspaceEnv(value: string) {
	return (container: Record<string, unknown>) => ({
		...container,
		env: (container.env as { name: string }[]).map((entry) =>
			entry.name === 'NAMZU_SANDBOX_WORKSPACE' ? { name: entry.name, value } : entry,
		),
	})
}

function waitingOf(pod: KubeObject): { reason?: string; message?: string } | undefined {
	const statuses = pod.status?.containerStatuses as
		| { state?: { waiting?: { reason?: string; message?: string } } }[]
		| undefined
	return statuses?.[0]?.state?.waiting
}

describe('block-mode claims on the process kubelet', () => {
	let device = ''

	it('a block workspace is an ext4 loop disk at the agent workspace that survives suspend and resume', async () => {
		const first = await createBlockSandbox('ws-a')
		const file = await diskFile('ws-a')
		device = (await cluster.kubelet.pvcBlockDevice(claimOf('ws-a'))) ?? ''
		expect(device).toMatch(/^\/dev\/loop\d+$/)
		expect(await loopsBackedBy(file)).toEqual([device])
		// Sparse: 256Mi long, next to nothing on disk.
		expect(statSync(file).size).toBe(256 * 2 ** 20)
		expect(statSync(file).blocks * 512).toBeLessThan(64 * 2 ** 20)
		const claim = await cluster.api.get<KubeObject>(paths.pvc(ns, 'workspace-ws-a'))
		expect(claim.status?.phase).toBe('Bound')

		// Inside: the device node at devicePath, the ext4 mounted at NAMZU_SANDBOX_WORKSPACE, owned by
		// runAsUser:runAsGroup and writable by the agent.
		const inside = await exec(
			first,
			[
				'test -b /dev/workspace && echo block',
				"stat -c '%t:%T' /dev/workspace",
				'awk \'$2 == "/workspace" { print $1, $3 }\' /proc/mounts',
				"stat -c '%u:%g' /workspace",
				'id -u',
			].join('; '),
		)
		expect(inside.exitCode).toBe(0)
		expect(inside.stdout.split('\n')).toEqual([
			'block',
			majorMinor(device),
			`${device} ext4`,
			'1000:1000',
			'1000',
			'',
		])
		// On the host: mounted nosuid,nodev in the pod's own directory.
		const host = JSON.parse(
			execFileSync('findmnt', ['--json', '--source', device, '--output', 'TARGET,FSTYPE,OPTIONS'], {
				encoding: 'utf8',
			}),
		) as { filesystems: { target: string; fstype: string; options: string }[] }
		expect(host.filesystems).toHaveLength(1)
		expect(host.filesystems[0]?.target).toBe(
			join(cluster.stateDir, 'kubelet', 'pods', first.metadata.uid, 'disks', 'workspace'),
		)
		expect(host.filesystems[0]?.fstype).toBe('ext4')
		expect(host.filesystems[0]?.options.split(',')).toEqual(
			expect.arrayContaining(['nosuid', 'nodev']),
		)

		const written = await exec(
			first,
			'head -c 4194304 /dev/urandom > /workspace/data.bin && sha256sum /workspace/data.bin',
		)
		expect(written.exitCode).toBe(0)
		const digest = written.stdout.split(' ')[0] ?? ''
		expect(digest).toMatch(/^[0-9a-f]{64}$/)

		await cluster.api.patch(
			paths.sandbox(ns, 'ws-a'),
			{ spec: { operatingMode: 'Suspended' } },
			'merge',
		)
		await waitGone(cluster.api, paths.pod(ns, 'ws-a'), { timeoutMs: 90_000 })
		// No pod holds the claim: the device is unmounted and detached, the disk file stays. The
		// kernel lets go before the kubelet's record does (and a detach it retries on a later sync
		// clears its record only then), so the wait is for both.
		await waitFor(
			'ws-a disk detached and no longer recorded',
			async () =>
				(await loopsBackedBy(file)).length === 0 &&
				(await cluster.kubelet.pvcBlockDevice(claimOf('ws-a'))) === undefined
					? true
					: undefined,
			{ timeoutMs: 30_000 },
		)
		expect(existsSync(file)).toBe(true)
		expect(
			execFileSync('findmnt', ['--noheadings', '--output', 'SOURCE'], { encoding: 'utf8' }),
		).not.toContain(file)

		await cluster.api.patch(
			paths.sandbox(ns, 'ws-a'),
			{ spec: { operatingMode: 'Running' } },
			'merge',
		)
		const second = await runningSandbox('ws-a')
		expect(second.metadata.uid).not.toBe(first.metadata.uid)
		device = (await cluster.kubelet.pvcBlockDevice(claimOf('ws-a'))) ?? ''
		expect(await loopsBackedBy(file)).toEqual([device])
		const read = await waitFor('agent in the resumed pod answers', () =>
			exec(second, 'sha256sum /workspace/data.bin'),
		)
		expect(read).toMatchObject({ exitCode: 0, stdout: `${digest}  /workspace/data.bin\n` })
	})

	it('a second claim never shows the first claim’s bytes, and the guest reaches no loop device but its own', async () => {
		const a = await cluster.api.get<KubeObject>(paths.pod(ns, 'ws-a'))
		const marker = `namzu-block-marker-${Math.random().toString(36).slice(2)}`
		// Positive control: the marker written through the filesystem is on ws-a's own raw device.
		const own = await exec(
			a,
			`printf '%s' '${marker}' > /workspace/marker && sync && dd if=/dev/workspace bs=1M iflag=direct status=none | grep -a -c '${marker}'`,
		)
		expect(own).toMatchObject({ exitCode: 0, stdout: '1\n' })

		const b = await createBlockSandbox('ws-b')
		const other = (await cluster.kubelet.pvcBlockDevice(claimOf('ws-b'))) ?? ''
		expect(other).toMatch(/^\/dev\/loop\d+$/)
		expect(other).not.toBe(device)
		const raw = await exec(
			b,
			`dd if=/dev/workspace bs=1M iflag=direct status=none | grep -a -c '${marker}'; test -r /dev/workspace && test -w /dev/workspace && echo rw`,
		)
		expect(raw.stdout).toBe('0\nrw\n')
		const listing = await exec(
			b,
			[
				'ls /dev',
				`test -e ${device} && echo SEES-A`,
				`test -e ${other} && echo SEES-OWN-HOST-NAME`,
				'cat /dev/loop0 > /dev/null 2>&1 && echo READ-LOOP0',
				'mknod /tmp/loop b 7 0 2>/dev/null && echo MKNOD',
				'true',
			].join('; '),
		)
		expect(listing.exitCode).toBe(0)
		const entries = listing.stdout.split('\n').filter((line) => line !== '')
		expect(entries).toContain('workspace')
		expect(entries.filter((entry) => /loop|SEES|READ|MKNOD/.test(entry))).toEqual([])
	})

	it('a block claim over the node’s cap keeps the pod waiting with the refusal named', async () => {
		await createBlockClaim('too-big', '8Gi')
		await createAgentPod('too-big', 'too-big')
		const pod = await waitObject(
			cluster.api,
			paths.pod(ns, 'too-big'),
			'too-big waiting with a message',
			(object) => waitingOf(object)?.message?.includes('more than the 4Gi') === true,
		)
		expect(waitingOf(pod)).toEqual({
			reason: 'ContainerCreating',
			message:
				'persistentvolumeclaim "too-big" requests 8Gi, more than the 4Gi this node provisions for a block claim',
		})
		const dir = await cluster.kubelet.pvcDirectory({ namespace: ns, name: 'too-big' })
		expect(existsSync(join(dir ?? '/nonexistent', BLOCK_DISK_FILE))).toBe(false)
		const claim = await cluster.api.get<KubeObject>(paths.pvc(ns, 'too-big'))
		expect(claim.status?.phase).not.toBe('Bound')
		await cluster.api.remove(paths.pod(ns, 'too-big'))
	})

	it('the block workspace follows NAMZU_SANDBOX_WORKSPACE; a relative one, or a block claim in volumeMounts, is refused', async () => {
		await createBlockClaim('custom')
		await createAgentPod('custom', 'custom', withWorkspaceEnv('/data/work'))
		const custom = await waitObject(
			cluster.api,
			paths.pod(ns, 'custom'),
			'custom Ready',
			(o) => o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
			{ timeoutMs: 90_000 },
		)
		const device = (await cluster.kubelet.pvcBlockDevice({ namespace: ns, name: 'custom' })) ?? ''
		const inside = await exec(
			custom,
			'awk \'$2 == "/data/work" || $2 == "/workspace" { print $1, $2, $3 }\' /proc/mounts; echo hi > /data/work/f && cat /data/work/f',
		)
		expect(inside).toMatchObject({ exitCode: 0, stdout: `${device} /data/work ext4\nhi\n` })

		await createBlockClaim('relative')
		await createAgentPod('relative', 'relative', withWorkspaceEnv('work'))
		await createBlockClaim('mounted')
		await createAgentPod('mounted', 'mounted', (container) => {
			const { volumeDevices: _devices, ...rest } = container
			return { ...rest, volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }] }
		})
		for (const [name, message] of [
			[
				'relative',
				'NAMZU_SANDBOX_WORKSPACE="work" is not an absolute path below / for the block workspace',
			],
			['mounted', 'volume "workspace" has volumeMode Block and can only be used in volumeDevices'],
		] as const) {
			const pod = await waitObject(
				cluster.api,
				paths.pod(ns, name),
				`${name} refused`,
				(object) => waitingOf(object)?.reason === 'CreateContainerConfigError',
			)
			expect(waitingOf(pod)).toEqual({ reason: 'CreateContainerConfigError', message })
		}
		for (const name of ['custom', 'relative', 'mounted'])
			await cluster.api.remove(paths.pod(ns, name))
	})

	it('deleting the Sandbox and its claim unmounts and detaches the disk and removes its backing file', async () => {
		const file = await diskFile('ws-a')
		const attached = (await cluster.kubelet.pvcBlockDevice(claimOf('ws-a'))) ?? ''
		expect(await loopsBackedBy(file)).toEqual([attached])
		expect(existsSync(join(LOOP_REGISTRY_DIR, `${attached.slice('/dev/'.length)}.json`))).toBe(true)
		await cluster.api.remove(paths.sandbox(ns, 'ws-a'))
		await waitGone(cluster.api, paths.pod(ns, 'ws-a'), { timeoutMs: 90_000 })
		await waitGone(cluster.api, paths.pvc(ns, 'workspace-ws-a'), { timeoutMs: 90_000 })
		await waitFor('ws-a disk file removed', async () => (existsSync(file) ? undefined : true), {
			timeoutMs: 30_000,
		})
		expect(
			execFileSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], {
				encoding: 'utf8',
			}),
		).not.toContain(file)
		expect(readdirSync(LOOP_REGISTRY_DIR)).not.toContain(`${attached.slice('/dev/'.length)}.json`)
		expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(` ${attached} `)
	})
})
