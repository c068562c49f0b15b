/**
 * A real Docker-compatible engine for the tests: Podman's `system service` on a socket in a fresh
 * temporary directory, stopped (and its directory removed) by `stop()`. The guest image goes into
 * it through the Engine API itself (`POST /images/create?fromSrc=-`, a tarball of the rootfs
 * `npm run image:build` made), once: the engine keeps it.
 *
 * Every service shares the machine's Podman storage, and the tests assert what the engine holds
 * ("no sandbox container left"), so one test process uses the engine at a time: the first service
 * a process starts waits for a machine-wide claim, its last `stop()` releases it.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DockerEngineClient } from '../../../../src/backends/container/docker/docker-engine-client.js'
import { DockerEngineRequestError } from '../../../../src/backends/container/docker/docker-errors.js'
import { guestRootfs } from '../../../deploy/guest-rootfs-runner.js'
import { waitForExclusive } from '../../../helpers/exclusive-claim.js'

export const PODMAN_PATH = '/usr/bin/podman'
export const GUEST_IMAGE_REF = 'localhost/namzu-sandbox-guest:latest'

/** Why the Docker tests cannot run here, or undefined when they can. */
export function dockerSkipReason(): string | undefined {
	if (process.getuid?.() !== 0) return 'needs root (a rootful Podman service)'
	try {
		accessSync(PODMAN_PATH, constants.X_OK)
	} catch {
		if (process.env.CI) throw new Error(`${PODMAN_PATH} is missing on CI: .ci/run installs podman`)
		return `${PODMAN_PATH} is not installed (apt-get install podman)`
	}
	if (guestRootfs() === undefined) {
		if (process.env.CI) throw new Error('the guest image is not built on CI: .ci/run builds it')
		return 'the guest image is not built: npm run image:build -- --rootfs-only'
	}
	return undefined
}

export interface PodmanService {
	readonly dir: string
	readonly socketPath: string
	readonly dockerHost: string
	readonly client: DockerEngineClient
	stop(): Promise<void>
}

/** runc where the host's cgroups are hybrid (crun refuses them), the engine's default otherwise. */
function runtimeArgs(): string[] {
	const unified = spawnSync('stat', ['-fc', '%T', '/sys/fs/cgroup']).stdout?.toString().trim()
	return unified === 'cgroup2fs' ? [] : ['--runtime', '/usr/sbin/runc']
}

const ENGINE_CLAIMS = '/run/lock/namzu-test-podman'
/** Long enough for another file's whole Docker suite (about a minute on a loaded machine). */
const ENGINE_WAIT_MS = 480_000

/** This process's hold on the engine: claimed by the first service, released by the last stop. */
let engineHold: Promise<{ release: () => void; services: number }> | undefined

async function holdEngine(): Promise<() => void> {
	engineHold ??= waitForExclusive(
		ENGINE_CLAIMS,
		'engine',
		'the Podman test engine',
		ENGINE_WAIT_MS,
	).then((release) => ({ release, services: 0 }))
	const claiming = engineHold
	const hold = await claiming.catch((error: unknown) => {
		if (engineHold === claiming) engineHold = undefined
		throw error
	})
	hold.services++
	let released = false
	return () => {
		if (released) return
		released = true
		hold.services--
		if (hold.services === 0 && engineHold === claiming) {
			engineHold = undefined
			hold.release()
		}
	}
}

export async function startPodmanService(): Promise<PodmanService> {
	const releaseEngine = await holdEngine()
	try {
		return await startHeldService(releaseEngine)
	} catch (error) {
		releaseEngine()
		throw error
	}
}

async function startHeldService(releaseEngine: () => void): Promise<PodmanService> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-podman-'))
	const socketPath = join(dir, 'engine.sock')
	const child: ChildProcess = spawn(
		PODMAN_PATH,
		[...runtimeArgs(), 'system', 'service', '--time=0', `unix://${socketPath}`],
		{ stdio: ['ignore', 'ignore', 'pipe'] },
	)
	let stderr = ''
	child.stderr?.on('data', (chunk: Buffer) => {
		stderr = (stderr + chunk.toString()).slice(-4000)
	})
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
	const client = new DockerEngineClient(socketPath)
	const deadline = Date.now() + 60_000
	for (;;) {
		const up = await stat(socketPath)
			.then(
				() => client.call({ method: 'GET', path: '/version' }).then(() => true),
				() => false,
			)
			.catch(() => false)
		if (up) break
		if (child.exitCode !== null || Date.now() > deadline) {
			child.kill('SIGKILL')
			await rm(dir, { recursive: true, force: true })
			throw new Error(`podman system service did not come up: ${stderr}`)
		}
		await sleep(100)
	}
	return {
		dir,
		socketPath,
		dockerHost: `unix://${socketPath}`,
		client,
		stop: async () => {
			if (child.exitCode === null) {
				child.kill('SIGTERM')
				await Promise.race([exited, sleep(20_000)])
				if (child.exitCode === null) child.kill('SIGKILL')
				await exited
			}
			await rm(dir, { recursive: true, force: true })
			releaseEngine()
		},
	}
}

/** The guest image in the engine: imported from the built rootfs unless it is there already. */
export async function ensureGuestImage(client: DockerEngineClient): Promise<string> {
	try {
		await client.json({
			method: 'GET',
			path: `/images/${encodeURIComponent(GUEST_IMAGE_REF)}/json`,
		})
		return GUEST_IMAGE_REF
	} catch (error) {
		if (!(error instanceof DockerEngineRequestError && error.status === 404)) throw error
	}
	const rootfs = guestRootfs()
	if (rootfs === undefined) throw new Error('the guest image is not built')
	const tar = spawn('tar', ['-C', rootfs, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] })
	const [repo, tag] = GUEST_IMAGE_REF.split(/:(?=[^:]*$)/)
	await client.call({
		method: 'POST',
		path: '/images/create',
		query: { fromSrc: '-', repo: repo ?? GUEST_IMAGE_REF, tag: tag ?? 'latest' },
		stream: tar.stdout ?? undefined,
		signal: AbortSignal.timeout(600_000),
	})
	return GUEST_IMAGE_REF
}
