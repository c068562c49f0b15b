import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmdirSync } from 'node:fs'
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { childEnv, type SourceBundle } from '../../helpers/bundle-source.js'

/**
 * A fresh state directory per test file, so leak scans only ever see our own sandboxes. Searchable
 * by others (mkdtemp makes it 0700): on a root host each sandbox runs as its own uid, which must
 * pass through the state directory to its workspace and the runtime cache.
 */
export async function freshStateDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-local-test-'))
	await chmod(dir, 0o711)
	return { dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** Pids of live (non-zombie) processes whose command line mentions `needle`. */
export function processesMentioning(needle: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		try {
			const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
			if (cmdline.includes(needle)) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/** Mount points in this (host) mount namespace under `prefix`. */
export function mountsUnder(prefix: string): string[] {
	return readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.map((line) => line.split(' ')[4] ?? '')
		.filter((mountPoint) => mountPoint.startsWith(prefix))
}

/**
 * What sandboxes hold in a state directory: every entry but the runtime copies of node and the
 * agent (which outlive every sandbox by design), the claims directory, whose locks are listed
 * one by one (`namzu-claims/<lock>`), and the checkpoint volume's directory, whose image and user
 * registrations are listed (`namzu-cow/volume.img`, `namzu-cow/users/<user>`; its lock file and
 * empty mount point stay by design, and its mount is what `mountsUnder` sees). Empty once every
 * sandbox is gone.
 */
export async function sandboxEntries(stateDir: string): Promise<string[]> {
	const names = await readdir(stateDir)
	const locks = names.includes('namzu-claims')
		? (await readdir(join(stateDir, 'namzu-claims'))).map((name) => `namzu-claims/${name}`)
		: []
	const volume = names.includes('namzu-cow') ? await volumeEntries(join(stateDir, 'namzu-cow')) : []
	const own = names.filter(
		(name) => !name.startsWith('namzu-runtime-') && name !== 'namzu-claims' && name !== 'namzu-cow',
	)
	return [...own, ...locks, ...volume]
}

async function volumeEntries(dir: string): Promise<string[]> {
	const names = await readdir(dir)
	const users = names.includes('users')
		? (await readdir(join(dir, 'users'))).map((name) => `namzu-cow/users/${name}`)
		: []
	return [...(names.includes('volume.img') ? ['namzu-cow/volume.img'] : []), ...users]
}

/** Sandbox ids of the `namzu-sbx-<id>` state directories under `stateDir`. */
export function stateDirIds(stateDir: string): string[] {
	return readdirSync(stateDir)
		.filter((name) => name.startsWith('namzu-sbx-'))
		.map((name) => name.slice('namzu-sbx-'.length))
}

/** Every `namzu-sbx-<id>` cgroup directory of ours that still exists (v1 memory/pids as measured here). */
export function cgroupDirsFor(ids: readonly string[]): string[] {
	const membership = readFileSync('/proc/self/cgroup', 'utf8')
	const memory = /\d+:memory:(.*)/.exec(membership)?.[1] ?? '/'
	const pids = /\d+:pids:(.*)/.exec(membership)?.[1] ?? '/'
	const parents = [
		`/sys/fs/cgroup/memory${memory === '/' ? '' : memory}`,
		`/sys/fs/cgroup/pids${pids === '/' ? '' : pids}`,
	]
	const found: string[] = []
	for (const parent of parents) {
		let names: string[] = []
		try {
			names = readdirSync(parent)
		} catch {
			continue
		}
		for (const id of ids) {
			if (names.includes(`namzu-sbx-${id}`)) found.push(`${parent}/namzu-sbx-${id}`)
		}
	}
	return found
}

export async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!check()) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

/**
 * Every cgroup directory named `namzu-sbx-<id>` in any hierarchy this process can see (v1 and the
 * unified one), found from `/proc/self/cgroup` + `/proc/self/mountinfo`.
 */
export function allCgroupDirsFor(id: string): string[] {
	const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.filter((line) => / - cgroup2? /.test(line))
		.map((line) => line.split(' ')[4] ?? '')
	const membership = readFileSync('/proc/self/cgroup', 'utf8').split('\n')
	const found: string[] = []
	for (const mount of mounts) {
		const hierarchy = mount.split('/').pop() ?? ''
		const line = membership.find((entry) => {
			const [, controllers = ''] = entry.split(':')
			return hierarchy === 'unified'
				? entry.startsWith('0::')
				: controllers.split(',').includes(hierarchy)
		})
		const own = line?.split(':').slice(2).join(':') ?? '/'
		const dir = `${mount}${own === '/' ? '' : own}/namzu-sbx-${id}`
		try {
			readdirSync(dir)
			found.push(dir)
		} catch {
			// Not in this hierarchy.
		}
	}
	return found
}

/** Removes the (empty) cgroup tree of a sandbox whose host died without tearing it down. */
export function removeLeftoverCgroups(id: string): void {
	const remove = (dir: string) => {
		for (const entry of readdirSync(dir, { withFileTypes: true })) {
			if (entry.isDirectory()) remove(join(dir, entry.name))
		}
		rmdirSync(dir)
	}
	for (const dir of allCgroupDirsFor(id)) remove(dir)
}

export interface FileProvider {
	readonly provider: LocalSandboxProvider
	readonly stateDir: string
}

/**
 * A provider on a fresh state directory for the enclosing `describe`, closed (and the directory
 * removed) after it. Read `provider`/`stateDir` inside tests, not at collection time.
 */
export function useLocalProvider(): FileProvider {
	let provider: LocalSandboxProvider | undefined
	let state: { dir: string; remove: () => Promise<void> } | undefined
	beforeAll(async () => {
		state = await freshStateDir()
		provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
	})
	afterAll(async () => {
		await provider?.close()
		await state?.remove()
	})
	return {
		get provider() {
			if (!provider) throw new Error('the provider exists only inside tests')
			return provider
		},
		get stateDir() {
			if (!state) throw new Error('the state directory exists only inside tests')
			return state.dir
		},
	}
}

/**
 * Runs a host program that creates one sandbox through `library` (`body` has `provider` and must
 * set `sandbox`), waits until the sandbox is up, then SIGKILLs the host: a host that died without
 * any teardown. Resolves with the sandbox's id and the dead host's pid.
 */
export async function crashHostAfterCreate(
	library: SourceBundle,
	stateDir: string,
	body: string,
): Promise<{ id: string; pid: number | undefined }> {
	const script = join(library.dir, `crashing-host-${Date.now()}-${Math.random()}.mjs`)
	await writeFile(
		script,
		`import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: ${JSON.stringify(stateDir)} })
let sandbox
${body}
console.log(JSON.stringify({ id: sandbox.id }))
setInterval(() => undefined, 1000)
`,
	)
	const child = spawn(process.execPath, [script], {
		env: childEnv(),
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	const id = await new Promise<string>((resolve, reject) => {
		let out = ''
		child.stdout.on('data', (chunk: Buffer) => {
			out += chunk.toString()
			const match = /\{"id":"([0-9a-f]{12})"\}/.exec(out)
			if (match?.[1]) resolve(match[1])
		})
		child.once('exit', (code) => reject(new Error(`host exited early (${code})`)))
	})
	child.kill('SIGKILL')
	await new Promise((resolve) => child.once('exit', resolve))
	return { id, pid: child.pid }
}

/** A python program that touches argv[1] MiB (every page written), then spins on the CPU for 0.2 s. */
export const ALLOCATE_AND_SPIN = [
	'import sys, time',
	'block = bytearray(int(sys.argv[1]) * 1024 * 1024)',
	'for i in range(0, len(block), 4096): block[i] = 1',
	'end = time.process_time() + 0.2',
	'while time.process_time() < end: pass',
	"print('done')",
].join('\n')
