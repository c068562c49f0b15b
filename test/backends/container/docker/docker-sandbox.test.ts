/**
 * The container tier on a real Docker-compatible engine (Podman's service, as root): each isolation
 * claim attacked with its positive control beside it, what the engine cannot enforce refused by
 * name, teardown checked (never reported done when the engine did not remove the container, one
 * teardown for concurrent destroys), and a crashed host's container reaped by label.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { connect, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	DOCKER_ID_LABEL,
	DOCKER_SANDBOX_LABEL,
	DOCKER_STATE_LABEL,
} from '../../../../src/backends/container/docker/docker-container-body.js'
import {
	ContainerEgressUnsupportedError,
	ContainerSandboxLayoutValidationError,
	type ContainerSandboxProvider,
	DockerEngineUnreachableError,
} from '../../../../src/container-entry.js'
import { createSandboxProvider, type Sandbox, SandboxConfigError } from '../../../../src/index.js'
import { LocalSandboxCleanupError } from '../../../../src/local-entry.js'
import { makeStateDir, removeStateDir } from '../container-test-support.js'
import {
	dockerSkipReason,
	ensureGuestImage,
	type PodmanService,
	startPodmanService,
} from './podman-service.js'

const skip = dockerSkipReason()
const layout = { outputs: { source: { type: 'inImage' as const } } }

async function containersLabelled(service: PodmanService, label: string): Promise<unknown[]> {
	return service.client.list({
		method: 'GET',
		path: '/containers/json',
		query: { all: 'true', filters: JSON.stringify({ label: [label] }) },
	})
}

/**
 * A unix socket in front of the engine that calls `onCreated` when the engine answers a container
 * create, before the answer is passed on: the engine has made the container, its client has not
 * read its Id yet.
 */
async function engineFront(upstreamPath: string, onCreated: () => void) {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-engine-front-'))
	const path = join(dir, 'front.sock')
	const upstreams = new Set<Socket>()
	const server = createServer((client) => {
		const upstream = connect(upstreamPath)
		upstreams.add(upstream)
		let seen = ''
		let awaitingAnswer = false
		client.on('data', (chunk: Buffer) => {
			seen = (seen + chunk.toString('latin1')).slice(-4096)
			if (/^POST \S*\/containers\/create/m.test(seen)) {
				seen = ''
				awaitingAnswer = true
			}
			upstream.write(chunk)
		})
		upstream.on('data', (chunk: Buffer) => {
			if (awaitingAnswer) {
				awaitingAnswer = false
				onCreated()
			}
			if (!client.destroyed) client.write(chunk)
		})
		client.on('error', () => undefined)
		upstream.on('error', () => undefined)
		upstream.on('close', () => {
			upstreams.delete(upstream)
			client.destroy()
		})
	})
	await new Promise<void>((listening) => server.listen(path, listening))
	return {
		dockerHost: `unix://${path}`,
		close: async () => {
			server.close()
			for (const upstream of upstreams) upstream.destroy()
			await rm(dir, { recursive: true, force: true })
		},
	}
}

async function sh(sandbox: Sandbox, script: string) {
	return sandbox.exec('sh', ['-c', script], { timeout: 60_000 })
}

describe.skipIf(skip !== undefined)('a Docker sandbox (Podman, root)', () => {
	let service: PodmanService
	let image = ''
	let stateDir = ''
	let provider: ContainerSandboxProvider

	beforeAll(async () => {
		service = await startPodmanService()
		image = await ensureGuestImage(service.client)
		stateDir = await makeStateDir('docker')
		provider = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'docker',
				image,
				dockerHost: service.dockerHost,
				stateDir,
			},
			layout,
		})
	}, 600_000)

	afterAll(async () => {
		try {
			await provider?.close()
			expect(await containersLabelled(service, `${DOCKER_SANDBOX_LABEL}=1`)).toEqual([])
			expect(await removeStateDir(stateDir)).toEqual([])
		} finally {
			await service?.stop()
		}
	}, 120_000)

	it('runs with a read-only root, no capabilities, no new privileges and a filter, as nobody', async () => {
		const sandbox = await provider.create()
		try {
			const attack = await sh(sandbox, 'echo x > /usr/namzu-owned; echo x > /etc/namzu-owned')
			expect(attack.exitCode).not.toBe(0)
			expect(attack.stderr).toMatch(/Read-only file system/)
			const control = await sh(
				sandbox,
				'echo ok > /workspace/f && cat /workspace/f; echo ok2 > /mnt/user-data/outputs/g && cat /mnt/user-data/outputs/g',
			)
			expect(control).toMatchObject({ exitCode: 0, stdout: 'ok\nok2\n' })
			const status = await sh(
				sandbox,
				"id -u; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
			)
			expect(status.stdout).toBe(
				'65534\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n',
			)
			// The machine layer's filter: a namespace is refused to the workload...
			const unshare = await sh(sandbox, 'unshare -U true && echo made-a-namespace')
			expect(unshare.stdout).not.toContain('made-a-namespace')
		} finally {
			await sandbox.destroy()
		}
		// ...unless the create asks for it.
		const allowed = await provider.create({ allowUserNamespaces: true })
		try {
			const unshare = await sh(allowed, 'unshare -U true && echo made-a-namespace')
			expect(unshare.stdout).toBe('made-a-namespace\n')
		} finally {
			await allowed.destroy()
		}
	}, 180_000)

	it('has no network but loopback (deny-all), and loopback works', async () => {
		const sandbox = await provider.create()
		try {
			const links = await sh(sandbox, 'ls /sys/class/net')
			expect(links.stdout.trim().split('\n')).toEqual(['lo'])
			const out = await sandbox.exec(
				'node',
				[
					'-e',
					"const s=require('net').connect(53,'1.1.1.1');s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})",
				],
				{ timeout: 60_000 },
			)
			expect(out.stdout.trim()).toBe('ENETUNREACH')
			const loop = await sandbox.exec(
				'node',
				[
					'-e',
					"const n=require('net');const srv=n.createServer(c=>c.end('pong')).listen(0,'127.0.0.1',()=>{n.connect(srv.address().port,'127.0.0.1').on('data',d=>{console.log(String(d));process.exit(0)})})",
				],
				{ timeout: 60_000 },
			)
			expect(loop.stdout.trim()).toBe('pong')
		} finally {
			await sandbox.destroy()
		}
	}, 180_000)

	it('holds the memory, pid and CPU limits asked for, as the engine reports them', async () => {
		const sandbox = await provider.create({ memoryLimitMb: 256, maxProcesses: 64, cpuLimit: 0.5 })
		try {
			const [container] = await containersLabelled(service, `${DOCKER_ID_LABEL}=${sandbox.id}`)
			const id = (container as { Id: string }).Id
			const inspect = await service.client.json({ method: 'GET', path: `/containers/${id}/json` })
			expect(inspect.HostConfig).toMatchObject({
				Memory: 256 * 1024 * 1024,
				MemorySwap: 256 * 1024 * 1024,
				PidsLimit: 64,
				NanoCpus: 500_000_000,
				ReadonlyRootfs: true,
				NetworkMode: 'none',
			})
			// The bounding set inside is empty (first test); what the engine records is its own default set dropped.
			expect((inspect.HostConfig as { CapAdd?: unknown }).CapAdd ?? []).toEqual([])
			// A fork bomb stops at the pids limit; the sandbox still answers afterwards.
			const bomb = await sh(sandbox, 'for i in $(seq 1 200); do sleep 30 & done 2>/dev/null; true')
			expect(bomb.exitCode).not.toBeNull()
			const count = await sh(sandbox, 'ls /proc | grep -c "^[0-9]"')
			expect(Number(count.stdout.trim())).toBeLessThanOrEqual(64)
		} finally {
			await sandbox.destroy()
		}
	}, 180_000)

	it('refuses by name the egress kinds and the disk limit the engine cannot enforce', async () => {
		await expect(provider.create({ egress: { kind: 'allow-all' } })).rejects.toBeInstanceOf(
			ContainerEgressUnsupportedError,
		)
		await expect(provider.create({ egress: { kind: 'allow-all' } })).rejects.toMatchObject({
			runtime: 'docker',
			egressKind: 'allow-all',
		})
		await expect(provider.create({ diskLimitMb: 64 })).rejects.toMatchObject({
			name: 'SandboxConfigError',
			field: 'diskLimitMb',
		})
		// A plain create still works beside the refusals.
		const sandbox = await provider.create()
		await sandbox.destroy()
	}, 180_000)

	it('refuses a tcp engine, an OCI runtime setting and a writable host directory at construction', () => {
		const make =
			(backend: Record<string, unknown>, given = layout) =>
			() =>
				createSandboxProvider({
					backend: { tier: 'container', runtime: 'docker', image, ...backend },
					layout: given,
				} as Parameters<typeof createSandboxProvider>[0])
		expect(make({ dockerHost: 'tcp://127.0.0.1:2375' })).toThrow(SandboxConfigError)
		expect(make({ runtimePath: '/usr/sbin/runc' })).toThrow(
			/backend.runtimePath.*not used with runtime 'docker'/,
		)
		expect(
			make({}, { outputs: { source: { type: 'hostDir', hostPath: stateDir } } } as never),
		).toThrow(ContainerSandboxLayoutValidationError)
	})

	it('shares one teardown among concurrent destroys and removes the container and its directory', async () => {
		const sandbox = await provider.create()
		const label = `${DOCKER_ID_LABEL}=${sandbox.id}`
		expect(await containersLabelled(service, label)).toHaveLength(1)
		await Promise.all([sandbox.destroy(), sandbox.destroy(), sandbox.destroy()])
		expect(await containersLabelled(service, label)).toEqual([])
		expect((await readdir(stateDir)).filter((name) => name.includes(sandbox.id))).toEqual([])
	}, 180_000)

	it('an abort as the engine answers a create leaves no container and no directory', async () => {
		const frontState = await makeStateDir('docker-abort-create')
		const controller = new AbortController()
		let creates = 0
		const front = await engineFront(service.socketPath, () => {
			creates++
			controller.abort(new Error('stop as the engine answers the create'))
		})
		const ownProvider = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'docker',
				image,
				dockerHost: front.dockerHost,
				stateDir: frontState,
			},
			layout,
		})
		try {
			const error = await ownProvider
				.create({ signal: controller.signal })
				.catch((caught: unknown) => caught)
			expect(creates, 'the engine made the container before the abort').toBe(1)
			expect((error as Error).message).toBe('stop as the engine answers the create')
			const ours = (await containersLabelled(service, `${DOCKER_SANDBOX_LABEL}=1`)).filter(
				(container) =>
					String(
						(container as { Labels?: Record<string, string> }).Labels?.[DOCKER_STATE_LABEL],
					).startsWith(frontState),
			)
			expect(ours, 'the container the engine made for the aborted create').toEqual([])
			expect(await readdir(frontState)).toEqual([])
			// Positive control: the same engine front serves a create that is not aborted.
			const sandbox = await ownProvider.create()
			expect((await sh(sandbox, 'echo through-the-front')).stdout).toBe('through-the-front\n')
			await sandbox.destroy()
			expect(creates).toBe(2)
		} finally {
			await ownProvider.close().catch(() => undefined)
			await front.close()
			expect(await removeStateDir(frontState)).toEqual([])
		}
	}, 240_000)

	it('never reports a teardown done when the engine did not remove the container', async () => {
		const own = await startPodmanService()
		const ownState = await makeStateDir('docker-teardown')
		const ownProvider = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'docker',
				image,
				dockerHost: own.dockerHost,
				stateDir: ownState,
			},
			layout,
		})
		const sandbox = await ownProvider.create()
		const label = `${DOCKER_ID_LABEL}=${sandbox.id}`
		// The engine goes away; the container (run by conmon) does not.
		await own.stop()
		const error = await sandbox.destroy().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(LocalSandboxCleanupError)
		expect((error as Error).cause).toBeInstanceOf(DockerEngineUnreachableError)
		// Still there, and its directory kept with it.
		expect(await containersLabelled(service, label)).toHaveLength(1)
		expect((await readdir(ownState)).some((name) => name.includes(sandbox.id))).toBe(true)
		// The next provider's reaper leaves it: its owner (this process) is alive.
		const [container] = await containersLabelled(service, label)
		await service.client.call({
			method: 'DELETE',
			path: `/containers/${(container as { Id: string }).Id}`,
			query: { force: 'true' },
		})
		await ownProvider.close().catch(() => undefined)
		await removeStateDir(ownState)
	}, 240_000)

	it("reaps a crashed host's container by label on the next provider's first create", async () => {
		const crashState = await makeStateDir('docker-crash')
		const script = `
			const { createSandboxProvider } = await import(${JSON.stringify(join(process.cwd(), 'dist/index.js'))})
			const provider = createSandboxProvider({
				backend: { tier: 'container', runtime: 'docker', image: ${JSON.stringify(image)}, dockerHost: ${JSON.stringify(service.dockerHost)}, stateDir: ${JSON.stringify(crashState)} },
				layout: { outputs: { source: { type: 'inImage' } } },
			})
			const sandbox = await provider.create()
			console.log(sandbox.id)
			setInterval(() => {}, 1000)
		`
		const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
			stdio: ['ignore', 'pipe', 'inherit'],
		})
		const id = await new Promise<string>((resolve, reject) => {
			child.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))
			child.once('exit', (code) => reject(new Error(`the crashing host exited ${code}`)))
		})
		const label = `${DOCKER_ID_LABEL}=${id}`
		child.kill('SIGKILL')
		await new Promise((resolve) => child.once('exit', resolve))
		expect(await containersLabelled(service, label)).toHaveLength(1)
		const next = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'docker',
				image,
				dockerHost: service.dockerHost,
				stateDir: crashState,
			},
			layout,
		})
		try {
			const sandbox = await next.create()
			const deadline = Date.now() + 60_000
			const leftovers = async () =>
				(await containersLabelled(service, label)).length +
				(await readdir(crashState)).filter((name) => name.includes(id)).length
			while ((await leftovers()) > 0 && Date.now() < deadline) {
				await new Promise((resolve) => setTimeout(resolve, 200))
			}
			expect(await containersLabelled(service, label)).toEqual([])
			expect((await readdir(crashState)).filter((name) => name.includes(id))).toEqual([])
			// The live provider's own sandbox is untouched by the reaper.
			expect((await sh(sandbox, 'echo alive')).stdout).toBe('alive\n')
		} finally {
			await next.close()
			expect(await removeStateDir(crashState)).toEqual([])
		}
	}, 300_000)
})
