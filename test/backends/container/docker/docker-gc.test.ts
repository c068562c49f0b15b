/**
 * `namzu-sandbox gc` on a Docker engine (Podman's service, as root): a host process holding a
 * `runtime: 'docker'` sandbox is SIGKILLed, then gc (`--dry-run` first) removes its container by the
 * reaper's label and its host directory, printing it. Positive controls: a container without our
 * label survives, and a live host's sandbox is left by gc and keeps working. Bad input: a `DOCKER_HOST` nobody
 * answers, or a tcp one, is a named failure (exit 1).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	DOCKER_ID_LABEL,
	DOCKER_SANDBOX_LABEL,
	parseHardLimits,
} from '../../../../src/backends/container/docker/docker-container-body.js'
import type { ContainerSandboxProvider } from '../../../../src/container-entry.js'
import { createSandboxProvider } from '../../../../src/index.js'
import {
	bundleCli,
	bundleSource,
	childEnv,
	type SourceBundle,
} from '../../../helpers/bundle-source.js'
import { runNodeToExit } from '../../../helpers/run-to-exit.js'
import { makeStateDir, removeStateDir } from '../container-test-support.js'
import {
	dockerSkipReason,
	ensureGuestImage,
	type PodmanService,
	startPodmanService,
} from './podman-service.js'

const skip = dockerSkipReason()

function reapedLine(verb: string, id: string): RegExp {
	return new RegExp(
		`^${verb} docker container [0-9a-f]{12} of sandbox ${id} \\(owner-gone\\) `,
		'm',
	)
}
const layout = { outputs: { source: { type: 'inImage' as const } } }

let cli: SourceBundle | undefined
beforeAll(async () => {
	cli = await bundleCli()
}, 120_000)
afterAll(async () => {
	await cli?.remove()
})

function gc(args: readonly string[], env: Record<string, string>) {
	if (!cli) throw new Error('cli bundle missing')
	return runNodeToExit([cli.file, 'gc', ...args], { env: childEnv(env) })
}

describe.skipIf(skip !== undefined)('namzu-sandbox gc on a Docker engine (Podman, root)', () => {
	let service: PodmanService
	let image = ''
	let library: SourceBundle | undefined
	const hosts: ChildProcess[] = []

	beforeAll(async () => {
		service = await startPodmanService()
		image = await ensureGuestImage(service.client)
		library = await bundleSource('src/backends/container/index.ts', 'docker-gc')
	}, 600_000)

	afterAll(async () => {
		try {
			for (const host of hosts) host.kill('SIGKILL')
			await library?.remove()
		} finally {
			await service?.stop()
		}
	}, 120_000)

	async function labelled(label: string): Promise<unknown[]> {
		return service.client.list({
			method: 'GET',
			path: '/containers/json',
			query: { all: 'true', filters: JSON.stringify({ label: [label] }) },
		})
	}

	/** A child host that makes one docker sandbox, prints its id and hangs: then SIGKILLed. */
	async function crashedHost(stateDir: string): Promise<string> {
		if (!library) throw new Error('bundle missing')
		const script = join(library.dir, `host-${Date.now()}.mjs`)
		await writeFile(
			script,
			`import { createContainerSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createContainerSandboxProvider(
	{ tier: 'container', runtime: 'docker', image: ${JSON.stringify(image)}, dockerHost: ${JSON.stringify(service.dockerHost)}, stateDir: ${JSON.stringify(stateDir)} },
	{ outputs: { source: { type: 'inImage' } } },
)
const sandbox = await provider.create()
console.log(JSON.stringify({ id: sandbox.id }))
setInterval(() => undefined, 1000)
`,
		)
		const child = spawn(process.execPath, [script], {
			env: childEnv(),
			stdio: ['ignore', 'pipe', 'inherit'],
		})
		hosts.push(child)
		const id = await new Promise<string>((resolve, reject) => {
			let out = ''
			child.stdout?.on('data', (chunk: Buffer) => {
				out += chunk.toString()
				const match = /\{"id":"([^"]+)"\}/.exec(out)
				if (match?.[1]) resolve(match[1])
			})
			child.once('exit', (code) => reject(new Error(`the host exited early (${code})`)))
		})
		const exited = new Promise((resolve) => child.once('exit', resolve))
		child.kill('SIGKILL')
		await exited
		return id
	}

	it("removes a SIGKILLed host's container by label and nothing not ours", async () => {
		const stateDir = await makeStateDir('docker-gc')
		const limits = parseHardLimits(await readFile('/proc/self/limits', 'utf8'))
		const control = await service.client.json({
			method: 'POST',
			path: '/containers/create',
			json: {
				Image: image,
				Cmd: ['sleep', '600'],
				Labels: { 'ai.example.other': '1' },
				// Below this process's hard limits: the engine may not raise them (as our own body does).
				HostConfig: {
					Ulimits: [
						{ Name: 'nofile', Soft: limits.nofile, Hard: limits.nofile },
						{ Name: 'nproc', Soft: limits.nproc, Hard: limits.nproc },
					],
				},
			},
		})
		const controlId = String(control.Id)
		// Made after the crash is reaped: its own provider's reaper would take the container first.
		let live: ContainerSandboxProvider | undefined
		try {
			await service.client.call({ method: 'POST', path: `/containers/${controlId}/start` })
			const id = await crashedHost(stateDir)
			const label = `${DOCKER_ID_LABEL}=${id}`
			expect(await labelled(label)).toHaveLength(1)
			expect((await readdir(stateDir)).filter((name) => name.includes(id))).toHaveLength(1)
			const env = { DOCKER_HOST: service.dockerHost, NAMZU_SANDBOX_STATE_DIR: stateDir }

			const dry = await gc(['--dry-run'], env)
			expect(dry.code, dry.stderr).toBe(0)
			expect(dry.stdout).toMatch(reapedLine('would reap', id))
			expect(await labelled(label)).toHaveLength(1)

			const run = await gc([], env)
			expect(run.code, run.stderr).toBe(0)
			expect(run.stdout).toMatch(reapedLine('reaped', id))
			expect(await labelled(label)).toEqual([])
			expect((await readdir(stateDir)).filter((name) => name.includes(id))).toEqual([])
			// The container without our label runs on.
			const inspected = await service.client.json({
				method: 'GET',
				path: `/containers/${controlId}/json`,
			})
			expect(inspected.State).toMatchObject({ Running: true })

			// A live host's sandbox is not a dead host's: gc leaves it, and it keeps working.
			live = createSandboxProvider({
				backend: {
					tier: 'container',
					runtime: 'docker',
					image,
					dockerHost: service.dockerHost,
					stateDir,
				},
				layout,
			})
			const alive = await live.create()
			const again = await gc([], env)
			expect(again.code, again.stderr).toBe(0)
			expect(again.stdout).not.toContain('docker container')
			expect(await labelled(`${DOCKER_ID_LABEL}=${alive.id}`)).toHaveLength(1)
			expect((await alive.exec('sh', ['-c', 'echo alive'])).stdout).toBe('alive\n')
		} finally {
			await live?.close()
			await service.client.call({
				method: 'DELETE',
				path: `/containers/${controlId}`,
				query: { force: 'true' },
			})
			expect(await labelled(`${DOCKER_SANDBOX_LABEL}=1`)).toEqual([])
			expect(await removeStateDir(stateDir)).toEqual([])
		}
	}, 300_000)
})

describe('namzu-sandbox gc: a Docker engine that cannot be looked at', () => {
	it('fails by name when DOCKER_HOST names a socket nobody answers, or a tcp engine', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-docker-gc-'))
		try {
			const env = { NAMZU_SANDBOX_STATE_DIR: dir }
			const silent = await gc([], { ...env, DOCKER_HOST: `unix://${join(dir, 'none.sock')}` })
			expect(silent.code).toBe(1)
			expect(silent.stderr).toContain('gc could not list Docker containers')
			expect(silent.stderr).toContain('DockerEngineUnreachableError')

			const tcp = await gc([], { ...env, DOCKER_HOST: 'tcp://127.0.0.1:2375' })
			expect(tcp.code).toBe(1)
			expect(tcp.stderr).toContain('gc did not look for Docker containers')
			expect(tcp.stderr).toContain('DOCKER_HOST')
		} finally {
			await rm(dir, { recursive: true, force: true })
		}
	}, 120_000)
})
