/**
 * Crash safety of the container tier, for each layout × disk limit on runc (and, on crun and runsc,
 * the case the issue names: a writable `hostDir` with `diskLimitMb`): a host process that
 * created sandboxes with an `inImage` or a writable `hostDir` `outputs` (plus a read-only `hostDir`
 * `uploads`), with and without `diskLimitMb`, each running a long command, is SIGKILLed; then
 * `namzu-sandbox gc`, or the next provider's first `create()`, leaves no process, cgroup, mount,
 * loop device, state root or lock, and every handed-over directory has its owners back. Attack: a
 * process that survives as the sandbox's uid keeps the uid and workspace locks held (and the
 * record that frees them) until it is gone.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, lstat, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createContainerSandboxProvider } from '../../../src/backends/container/index.js'
import type { ContainerRuntime } from '../../../src/backends/container/runtime-argv.js'
import { readHostClaims } from '../../../src/backends/machine/claims/release-host-claims.js'
import { collectLocalGarbage } from '../../../src/backends/machine/index.js'
import {
	bundleCli,
	bundleSource,
	childEnv,
	type SourceBundle,
} from '../../helpers/bundle-source.js'
import { runNodeToExit } from '../../helpers/run-to-exit.js'
import {
	CRUN_PATH,
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	mountsMentioning,
	processesMentioning,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()
/** The other runtimes, each with why it cannot run here (undefined: it can). */
const OTHER_RUNTIMES: readonly [ContainerRuntime, string, string | undefined][] = [
	['crun', CRUN_PATH, containerSkipReason(CRUN_PATH)],
	['runsc', RUNSC_PATH, containerSkipReason(RUNSC_PATH)],
]
/** Several containers started in a child host on a loaded 2-core machine. */
const CASE_TIMEOUT_MS = 300_000
const SETPRIV = '/usr/bin/setpriv'
const LOSETUP = '/usr/sbin/losetup'

let library: SourceBundle | undefined
let cli: SourceBundle | undefined
const hosts: ChildProcess[] = []
const scratch: string[] = []

beforeAll(async () => {
	if ([skip, ...OTHER_RUNTIMES.map(([, , reason]) => reason)].every((r) => r !== undefined)) return
	library = await bundleSource('src/backends/container/index.ts', 'container-crash')
	cli = await bundleCli()
})
afterAll(async () => {
	for (const host of hosts) host.kill('SIGKILL')
	await library?.remove()
	await cli?.remove()
	for (const dir of scratch) await rm(dir, { recursive: true, force: true })
})

async function waitFor(check: () => boolean, timeoutMs = 20_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!check()) {
		if (Date.now() > deadline) throw new Error('condition not reached in time')
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
}

/** Loop devices whose backing file is under `dir`. */
function loopDevicesUnder(dir: string): string[] {
	const run = spawnSync(LOSETUP, ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'], {
		encoding: 'utf8',
	})
	return run.stdout
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => line.includes(dir))
}

/** A sized workspace's image (in the state root, or in the copy-on-write volume), not the volume's. */
function isSizedWorkspaceLoop(line: string): boolean {
	return /workspace(\.img)?\)?$/.test(line)
}

/** A host directory for a layout slot, owned by a third uid, with an entry of its own. */
async function hostDir(label: string): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), `namzu-crash-${label}-`))
	scratch.push(dir)
	await chmod(dir, 0o755)
	await writeFile(join(dir, 'kept.txt'), 'the caller’s\n')
	return dir
}

async function owners(dir: string): Promise<Record<string, string>> {
	const out: Record<string, string> = {}
	for (const name of ['.', ...(await readdir(dir))]) {
		const info = await lstat(join(dir, name))
		out[name] = `${info.uid}:${info.gid}`
	}
	return out
}

interface HostCase {
	readonly outputs: string | undefined
	readonly uploads?: string
	readonly diskLimitMb?: number
}

/** Starts a child host that creates one sandbox per case (each its own provider), prints ids, hangs. */
async function startHost(
	stateDir: string,
	cases: readonly HostCase[],
	runtime: ContainerRuntime = 'runc',
): Promise<{ child: ChildProcess; ids: string[] }> {
	if (!library) throw new Error('bundle missing')
	const script = join(library.dir, `host-${Date.now()}-${Math.random()}.mjs`)
	await writeFile(
		script,
		`import { createContainerSandboxProvider } from ${JSON.stringify(library.file)}
const ids = []
for (const c of ${JSON.stringify(cases)}) {
	const layout = {
		outputs: { source: c.outputs ? { type: 'hostDir', hostPath: c.outputs } : { type: 'inImage' } },
		...(c.uploads ? { uploads: { source: { type: 'hostDir', hostPath: c.uploads } } } : {}),
	}
	const provider = createContainerSandboxProvider(
		{ tier: 'container', runtime: ${JSON.stringify(runtime)}, image: ${JSON.stringify(guestImage())}, stateDir: ${JSON.stringify(stateDir)} },
		layout,
	)
	const sandbox = await provider.create(c.diskLimitMb ? { diskLimitMb: c.diskLimitMb } : {})
	await sandbox.writeFile('note.txt', 'left by a host')
	if (c.outputs) await sandbox.exec('sh', ['-c', 'echo out > /mnt/user-data/outputs/made.txt'])
	await sandbox.exec('sh', ['-c', 'sleep 300 >/dev/null 2>&1 </dev/null & echo started'])
	ids.push(sandbox.id)
}
console.log(JSON.stringify({ ids }))
setInterval(() => undefined, 1000)
`,
	)
	const child = spawn(process.execPath, [script], {
		env: childEnv(),
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	hosts.push(child)
	const ids = await new Promise<string[]>((resolve, reject) => {
		let out = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			out += chunk.toString()
			const match = /\{"ids":(\[[^\]]*\])\}/.exec(out)
			if (match?.[1]) resolve(JSON.parse(match[1]))
		})
		child.once('exit', (code) => reject(new Error(`host exited early (${code})`)))
	})
	return { child, ids }
}

async function kill(child: ChildProcess): Promise<void> {
	if (child.exitCode !== null || child.signalCode !== null) return
	const exited = new Promise((resolve) => child.once('exit', resolve))
	child.kill('SIGKILL')
	await exited
}

interface Crash {
	readonly stateDir: string
	readonly ids: string[]
	readonly dirs: Record<string, Record<string, string>>
}

/**
 * Every layout × disk limit in one crashed host: inImage outputs with and without a sized
 * workspace, a writable hostDir outputs (plus a read-only hostDir uploads) with a sized workspace
 * (the README's example), and one without.
 */
async function crashedHost(): Promise<Crash> {
	const stateDir = await makeStateDir('crash')
	const sized = await hostDir('out-sized')
	const plain = await hostDir('out-plain')
	const uploads = await hostDir('uploads')
	const before = {
		[sized]: await owners(sized),
		[plain]: await owners(plain),
		[uploads]: await owners(uploads),
	}
	const { child, ids } = await startHost(stateDir, [
		{ outputs: undefined },
		{ outputs: undefined, diskLimitMb: 16 },
		{ outputs: sized, uploads, diskLimitMb: 16 },
		{ outputs: plain },
	])
	await kill(child)
	// The containers outlive their host, each with a record the reaper accepts as the sandbox's.
	for (const id of ids) {
		const claims = await readHostClaims(id, join(stateDir, `namzu-sbx-${id}`))
		expect(claims?.owner?.pid, id).toBe(child.pid)
		expect(claims?.launcher?.pid, id).toBeGreaterThan(0)
		expect(processesMentioning(`namzu-sbx-${id}`).length, id).toBeGreaterThan(0)
	}
	const both = await readHostClaims(ids[2] ?? '', join(stateDir, `namzu-sbx-${ids[2]}`))
	expect(both?.workspace?.path).toBe(sized)
	// The sized workspace: its own image, in the copy-on-write volume where the state dir has one.
	expect(both?.workspaceVolume ?? both?.workspaceDisk).toBe(
		join(stateDir, `namzu-sbx-${ids[2]}`, 'workspace'),
	)
	// Two sized workspaces, and the state directory's copy-on-write volume (ext4 here has no
	// reflinks) the unsized workspaces live on: all three must be gone after the reap.
	const loops = loopDevicesUnder(stateDir)
	expect(loops.filter(isSizedWorkspaceLoop).length).toBe(2)
	expect(loops.filter((line) => !isSizedWorkspaceLoop(line)).length).toBeLessThanOrEqual(1)
	expect(await owners(sized)).not.toEqual(before[sized])
	return { stateDir, ids, dirs: before }
}

async function assertNothingLeft(crash: Crash): Promise<void> {
	for (const id of crash.ids) {
		await waitFor(() => processesMentioning(`namzu-sbx-${id}`).length === 0)
		expect(cgroupDirsOf(id), id).toEqual([])
	}
	expect(mountsMentioning(crash.stateDir)).toEqual([])
	expect(loopDevicesUnder(crash.stateDir)).toEqual([])
	const left = (await readdir(crash.stateDir)).filter((name) => !name.startsWith('namzu-runtime-'))
	const locks = left.includes('namzu-claims')
		? await readdir(join(crash.stateDir, 'namzu-claims'))
		: []
	expect(left.filter((name) => name !== 'namzu-claims' && name !== 'namzu-cow')).toEqual([])
	expect(locks).toEqual([])
	// The copy-on-write volume's directory may stay, empty of users and without its image.
	if (left.includes('namzu-cow')) {
		const cow = join(crash.stateDir, 'namzu-cow')
		expect((await readdir(cow)).filter((name) => !['lock', 'mnt', 'users'].includes(name))).toEqual(
			[],
		)
		expect(await readdir(join(cow, 'users')).catch(() => [])).toEqual([])
	}
	// Every handed-over directory is its owner's again, what the sandbox made in it too.
	for (const [dir, before] of Object.entries(crash.dirs)) {
		const after = await owners(dir)
		for (const [name, owner] of Object.entries(after)) {
			expect(`${name} ${owner}`).toBe(`${name} ${before[name] ?? before['.']}`)
		}
	}
}

describe.skipIf(skip !== undefined)(
	'container tier: a SIGKILLed host, then gc or the next provider',
	() => {
		it(
			'namzu-sandbox gc reaps every layout × disk limit: no process, cgroup, mount, loop device, state root or lock',
			async () => {
				const crash = await crashedHost()
				try {
					if (!cli) throw new Error('cli bundle missing')
					const env = childEnv({ NAMZU_SANDBOX_STATE_DIR: crash.stateDir })
					const run = await runNodeToExit([cli.file, 'gc'], { env })
					expect(run.code, run.stderr).toBe(0)
					for (const id of crash.ids)
						expect(run.stdout).toContain(`reaped sandbox ${id} (owner-gone)`)
					await assertNothingLeft(crash)
				} finally {
					expect(await removeStateDir(crash.stateDir)).toEqual([])
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'the next provider’s first create() reaps them, and its own sandbox is untouched',
			async () => {
				const crash = await crashedHost()
				try {
					const provider = createContainerSandboxProvider(
						{ tier: 'container', image: guestImage(), stateDir: crash.stateDir },
						{ outputs: { source: { type: 'inImage' } } },
					)
					const sandbox = await provider.create()
					expect((await sandbox.exec('true')).exitCode).toBe(0)
					await sandbox.destroy()
					// close() waits for the background reaper.
					await provider.close()
					await assertNothingLeft(crash)
				} finally {
					expect(await removeStateDir(crash.stateDir)).toEqual([])
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'attack: a process surviving as the sandbox uid keeps its uid and workspace locks held until it is gone',
			async () => {
				const stateDir = await makeStateDir('crash-hold')
				const outputs = await hostDir('out-held')
				const survivors: ChildProcess[] = []
				try {
					const { child, ids } = await startHost(stateDir, [{ outputs, diskLimitMb: 16 }])
					const [id = ''] = ids
					const root = join(stateDir, `namzu-sbx-${id}`)
					const claims = await readHostClaims(id, root)
					const identity = claims?.identity
					if (identity === undefined || claims?.workspace === undefined)
						throw new Error('no claims')
					const { uid, gid } = identity
					// Outside every group of the sandbox, as its uid: what an escape would leave behind.
					const survivor = spawn(
						SETPRIV,
						[`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', 'sleep', '300'],
						{ stdio: 'ignore' },
					)
					survivors.push(survivor)
					await waitFor(() => survivor.pid !== undefined)
					await kill(child)
					const locks = [identity.lockPath, claims.workspace.lockPath]

					const held = await collectLocalGarbage({ stateDir })
					expect(held.failed).toEqual([id])
					expect(held.locks).toEqual([])
					// The container is gone; the uid's locks and the record that frees them stay.
					await waitFor(() => processesMentioning(`namzu-sbx-${id}`).length === 0)
					expect(cgroupDirsOf(id)).toEqual([])
					for (const lock of locks) expect(existsSync(lock), lock).toBe(true)
					expect(existsSync(root)).toBe(true)
					expect((await readHostClaims(id, root))?.identity?.uid).toBe(uid)

					// Positive control: once the survivor is gone, the next gc frees everything.
					const exited = new Promise((resolve) => survivor.once('exit', resolve))
					survivor.kill('SIGKILL')
					await exited
					const freed = await collectLocalGarbage({ stateDir })
					expect(freed.failed).toEqual([])
					expect(freed.sandboxes.map((entry) => entry.id)).toEqual([id])
					for (const lock of locks) expect(existsSync(lock), lock).toBe(false)
					expect(existsSync(root)).toBe(false)
					expect((await lstat(outputs)).uid).toBe(0)
					expect(loopDevicesUnder(stateDir)).toEqual([])
				} finally {
					for (const survivor of survivors) survivor.kill('SIGKILL')
					expect(await removeStateDir(stateDir)).toEqual([])
				}
			},
			CASE_TIMEOUT_MS,
		)
	},
)

describe.each(OTHER_RUNTIMES)(
	'container tier on %s: a SIGKILLed host, then gc',
	(runtime, runtimePath, reason) => {
		it.skipIf(reason !== undefined)(
			`a writable hostDir outputs (plus read-only uploads) with diskLimitMb is reaped by gc${reason ? ` (skipped: ${reason})` : ''}`,
			async () => {
				const stateDir = await makeStateDir(`crash-${runtime}`)
				try {
					const sized = await hostDir(`out-${runtime}`)
					const uploads = await hostDir(`uploads-${runtime}`)
					const before = { [sized]: await owners(sized), [uploads]: await owners(uploads) }
					const { child, ids } = await startHost(
						stateDir,
						[{ outputs: sized, uploads, diskLimitMb: 16 }],
						runtime,
					)
					await kill(child)
					const [id = ''] = ids
					const claims = await readHostClaims(id, join(stateDir, `namzu-sbx-${id}`))
					expect(claims?.owner?.pid).toBe(child.pid)
					expect(claims?.workspace?.path).toBe(sized)
					expect(processesMentioning(`namzu-sbx-${id}`).length).toBeGreaterThan(0)
					// The container is this runtime's: its own `list` over the sandbox's runtime root names it.
					const listed = spawnSync(
						runtimePath,
						['--root', join(stateDir, `namzu-sbx-${id}`, 'runtime'), 'list'],
						{ encoding: 'utf8' },
					)
					expect(listed.stdout).toContain(id)
					expect(loopDevicesUnder(stateDir).filter(isSizedWorkspaceLoop).length).toBe(1)
					if (!cli) throw new Error('cli bundle missing')
					const env = childEnv({ NAMZU_SANDBOX_STATE_DIR: stateDir })
					const run = await runNodeToExit([cli.file, 'gc'], { env })
					expect(run.code, run.stderr).toBe(0)
					expect(run.stdout).toContain(`reaped sandbox ${id} (owner-gone)`)
					await assertNothingLeft({ stateDir, ids, dirs: before })
				} finally {
					expect(await removeStateDir(stateDir)).toEqual([])
				}
			},
			CASE_TIMEOUT_MS,
		)
	},
)
