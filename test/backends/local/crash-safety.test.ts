/**
 * Crash safety of the local tier: a host process SIGKILLed with sandboxes of every kind up
 * (ephemeral, a caller workspace, allow-all, a sized workspace) leaves state roots, cgroups,
 * mounts, locks and a caller workspace handed to a sandbox uid; the next provider's start and
 * `namzu-sandbox gc` reap all of it — and never what a live host or a live kept-alive sandbox holds.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import {
	chmod,
	chown,
	lstat,
	mkdir,
	mkdtemp,
	readdir,
	rm,
	utimes,
	writeFile,
} from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { readHostClaims } from '../../../src/backends/machine/claims/release-host-claims.js'
import {
	collectLocalGarbage,
	destroyLocalSandbox,
	listLocalSandboxes,
} from '../../../src/backends/machine/index.js'
import { runtimeDirName } from '../../../src/backends/machine/launch/runtime-cache.js'
import {
	bundleCli,
	bundleSource,
	childEnv,
	type SourceBundle,
} from '../../helpers/bundle-source.js'
import { runNodeToExit } from '../../helpers/run-to-exit.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	allCgroupDirsFor,
	freshStateDir,
	mountsUnder,
	processesMentioning,
	sandboxEntries,
	stateDirIds,
	waitFor,
} from './local-test-support.js'

const skip = bwrapSkipReason()
/** Each case starts several sandboxes in separate host processes on a shared 2-core machine. */
const CASE_TIMEOUT_MS = 120_000
const asRoot = process.getuid?.() === 0

let library: SourceBundle | undefined
let cli: SourceBundle | undefined
const scratch: string[] = []
const hosts: ChildProcess[] = []

beforeAll(async () => {
	library = await bundleSource('src/backends/local/index.ts', 'local-tier')
	cli = await bundleCli()
})
afterAll(async () => {
	for (const host of hosts) host.kill('SIGKILL')
	await library?.remove()
	await cli?.remove()
	for (const dir of scratch) await rm(dir, { recursive: true, force: true })
})

/** A caller workspace (under /root, so a root host stages it) with an entry of a third uid. */
async function callerWorkspace(): Promise<string> {
	const workspace = await mkdtemp(join(asRoot ? '/root' : '/tmp', 'namzu-crash-ws-'))
	scratch.push(workspace)
	await chmod(workspace, 0o755)
	await mkdir(join(workspace, 'deep'))
	await writeFile(join(workspace, 'deep', 'third.txt'), 'third uid\n')
	if (asRoot) {
		await chown(join(workspace, 'deep'), 1234, 4321)
		await chown(join(workspace, 'deep', 'third.txt'), 1234, 4321)
	}
	return workspace
}

async function owners(root: string): Promise<Record<string, string>> {
	const out: Record<string, string> = {}
	const walk = async (relative: string) => {
		const info = await lstat(join(root, relative))
		out[relative || '.'] = `${info.uid}:${info.gid}`
		if (info.isDirectory()) {
			for (const name of await readdir(join(root, relative))) await walk(join(relative, name))
		}
	}
	await walk('')
	return out
}

/**
 * Starts a host process that creates sandboxes with `configs` (each writes a file and runs a
 * command), prints their ids and hangs. The caller SIGKILLs it, or leaves it running.
 */
async function startHost(
	stateDir: string,
	configs: readonly Record<string, unknown>[],
): Promise<{ child: ChildProcess; ids: string[] }> {
	if (!library) throw new Error('bundle missing')
	const script = join(library.dir, `host-${Date.now()}-${Math.random()}.mjs`)
	await writeFile(
		script,
		`import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: ${JSON.stringify(stateDir)} })
const ids = []
for (const config of ${JSON.stringify(configs)}) {
	const sandbox = await provider.create(config)
	await sandbox.writeFile('note.txt', 'left by a host')
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
	readonly workspace: string
	readonly workspaceOwners: Record<string, string>
	readonly removeState: () => Promise<void>
}

/** One host with a sandbox of each kind, SIGKILLed; what it left is asserted to be there. */
async function crashedHost(): Promise<Crash> {
	const state = await freshStateDir()
	const workspace = await callerWorkspace()
	const workspaceOwners = await owners(workspace)
	const { child, ids } = await startHost(state.dir, [
		{},
		{ workingDirectory: workspace },
		{ egress: { kind: 'allow-all' } },
		...(asRoot ? [{ diskLimitMb: 16 }] : []),
	])
	await kill(child)
	// bwrap dies with its parent and slirp4netns with bwrap: no process of theirs outlives the host.
	for (const id of ids) await waitFor(() => processesMentioning(`namzu-sbx-${id}`).length === 0)
	// The crash left it all behind: state roots, records naming the dead host, cgroups, mounts.
	expect(stateDirIds(state.dir).sort()).toEqual([...ids].sort())
	for (const id of ids) {
		const claims = await readHostClaims(id, join(state.dir, `namzu-sbx-${id}`))
		expect(claims?.owner?.pid).toBe(child.pid)
		expect(claims?.cgroupDirs?.length).toBeGreaterThan(0)
		expect(claims?.launcher?.pid).toBeGreaterThan(0)
		expect(allCgroupDirsFor(id).length).toBeGreaterThan(0)
	}
	if (asRoot) {
		expect(mountsUnder(state.dir).length).toBeGreaterThanOrEqual(2)
		expect(await owners(workspace)).not.toEqual(workspaceOwners)
		expect((await sandboxEntries(state.dir)).filter((e) => e.endsWith('.lock')).length).toBe(
			ids.length + 1,
		)
	}
	return { stateDir: state.dir, ids, workspace, workspaceOwners, removeState: state.remove }
}

/** Nothing of the crashed sandboxes is left anywhere on the host. */
async function assertNothingLeft(crash: Crash): Promise<void> {
	for (const id of crash.ids) {
		expect(allCgroupDirsFor(id), id).toEqual([])
		await waitFor(() => processesMentioning(`namzu-sbx-${id}`).length === 0)
	}
	expect(stateDirIds(crash.stateDir)).toEqual([])
	expect(mountsUnder(crash.stateDir)).toEqual([])
	expect(await sandboxEntries(crash.stateDir)).toEqual([])
	// Every entry has its owner back; what the sandbox wrote belongs to the workspace's owner.
	expect(await owners(crash.workspace)).toEqual({
		...crash.workspaceOwners,
		'note.txt': crash.workspaceOwners['.'],
	})
	expect((await readdir(crash.workspace)).sort()).toEqual(['deep', 'note.txt'])
}

describe.skipIf(skip !== undefined)(
	`a SIGKILLed host leaves nothing that survives the next reaper${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it(
			'the next provider reaps everything at its start: directories, cgroups, mounts, processes, locks, workspace ownership',
			async () => {
				const crash = await crashedHost()
				try {
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir: crash.stateDir })
					const sandbox = await provider.create()
					// The provider's own sandbox is a live host's: the reaper beside it left it alone.
					expect((await sandbox.exec('true')).exitCode).toBe(0)
					await sandbox.destroy()
					// close() waits for the background reaper.
					await provider.close()
					await assertNothingLeft(crash)
				} finally {
					await crash.removeState()
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'namzu-sandbox gc --dry-run lists what a dead host left and changes nothing; gc reaps it and prints each',
			async () => {
				const crash = await crashedHost()
				try {
					if (!cli) throw new Error('cli bundle missing')
					const env = childEnv({ NAMZU_SANDBOX_STATE_DIR: crash.stateDir })
					const dry = await runNodeToExit([cli.file, 'gc', '--dry-run'], { env })
					expect(dry.code, dry.stderr).toBe(0)
					for (const id of crash.ids) {
						expect(dry.stdout).toContain(`would reap sandbox ${id} (owner-gone)`)
					}
					expect(stateDirIds(crash.stateDir).sort()).toEqual([...crash.ids].sort())
					for (const id of crash.ids) expect(allCgroupDirsFor(id).length).toBeGreaterThan(0)

					const run = await runNodeToExit([cli.file, 'gc'], { env })
					expect(run.code, run.stderr).toBe(0)
					for (const id of crash.ids)
						expect(run.stdout).toContain(`reaped sandbox ${id} (owner-gone)`)
					await assertNothingLeft(crash)

					const again = await runNodeToExit([cli.file, 'gc'], { env })
					expect(again).toMatchObject({ code: 0, stdout: '' })
					expect(again.stderr).toContain('nothing to reap')
				} finally {
					await crash.removeState()
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'positive controls: a concurrent reaper leaves a live host’s sandboxes and a kept-alive sandbox running',
			async () => {
				const state = await freshStateDir()
				try {
					// A sandbox of this very process, one of a second live host, one kept alive by a host that
					// has exited, and one of a host that crashed.
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
					const own = await provider.create()
					const live = await startHost(state.dir, [{}])
					const keptHost = await startHost(state.dir, [{ keepAlive: true, keepAliveMs: 120_000 }])
					await kill(keptHost.child)
					const crashed = await startHost(state.dir, [{}])
					await kill(crashed.child)
					const [keptId] = keptHost.ids
					const [liveId] = live.ids
					const [crashedId] = crashed.ids

					if (!cli) throw new Error('cli bundle missing')
					const run = await runNodeToExit([cli.file, 'gc'], {
						env: childEnv({ NAMZU_SANDBOX_STATE_DIR: state.dir }),
					})
					expect(run.code, run.stderr).toBe(0)
					expect(run.stdout.trim().split('\n')).toEqual([
						`reaped sandbox ${crashedId} (owner-gone) ${join(state.dir, `namzu-sbx-${crashedId}`)}`,
					])
					expect(stateDirIds(state.dir).sort()).toEqual([own.id, liveId, keptId].sort())
					expect((await own.exec('cat', ['/proc/self/status'])).exitCode).toBe(0)
					expect(processesMentioning(`namzu-sbx-${liveId}`).length).toBeGreaterThan(0)
					expect(allCgroupDirsFor(liveId ?? '').length).toBeGreaterThan(0)
					expect((await listLocalSandboxes({ stateDir: state.dir })).map((l) => l.id)).toEqual([
						keptId,
					])
					const reopened = await provider.open(keptId ?? '')
					expect((await reopened.readFile('note.txt')).toString()).toBe('left by a host')

					// Once the live host dies too, its sandbox is garbage like any other.
					await kill(live.child)
					const report = await collectLocalGarbage({ stateDir: state.dir })
					expect(report.sandboxes.map((s) => [s.id, s.reason])).toEqual([[liveId, 'owner-gone']])
					await reopened.destroy()
					await own.destroy()
					await provider.close()
					expect(await sandboxEntries(state.dir)).toEqual([])
				} finally {
					for (const listing of await listLocalSandboxes({ stateDir: state.dir })) {
						await destroyLocalSandbox(listing.id, { stateDir: state.dir }).catch(() => undefined)
					}
					await state.remove()
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'a state root with no record goes only once old and unmentioned; a lock only once its sandbox and taker are gone',
			async () => {
				const state = await freshStateDir()
				const sleepers: ChildProcess[] = []
				try {
					const hourAgo = new Date(Date.now() - 3_600_000)
					const root = (id: string) => join(state.dir, `namzu-sbx-${id}`)
					for (const id of ['aaaaaaaaaaaa', 'bbbbbbbbbbbb', 'cccccccccccc']) {
						await mkdir(join(root(id), 'workspace'), { recursive: true })
						await writeFile(join(root(id), 'workspace', 'file'), 'x')
					}
					// An old root nothing mentions; an old root a live process works in; a fresh one.
					await utimes(root('aaaaaaaaaaaa'), hourAgo, hourAgo)
					await utimes(root('bbbbbbbbbbbb'), hourAgo, hourAgo)
					sleepers.push(spawn('sleep', ['30'], { cwd: join(root('bbbbbbbbbbbb'), 'workspace') }))
					const locks = join(state.dir, 'namzu-claims')
					await mkdir(locks, { mode: 0o700 })
					const gone = spawnSync('true').pid
					const orphan = join(locks, 'uid-1879048201.lock')
					const lock = (id: string, pid: number | undefined) =>
						`${JSON.stringify({ id, stateRoot: root(id), pid, takenAtMs: Date.now() })}\n`
					await writeFile(orphan, lock('dddddddddddd', gone))
					// Its taker lives (it takes the uid lock before it makes the root); its root exists.
					await writeFile(join(locks, 'uid-1879048202.lock'), lock('eeeeeeeeeeee', process.pid))
					await writeFile(join(locks, 'uid-1879048203.lock'), lock('cccccccccccc', gone))

					const report = await collectLocalGarbage({ stateDir: state.dir })
					expect(report.sandboxes).toEqual([
						{ id: 'aaaaaaaaaaaa', stateRoot: root('aaaaaaaaaaaa'), reason: 'unrecorded' },
					])
					expect(report.locks).toEqual([orphan])
					expect(stateDirIds(state.dir).sort()).toEqual(['bbbbbbbbbbbb', 'cccccccccccc'])
					expect((await readdir(locks)).sort()).toEqual([
						'uid-1879048202.lock',
						'uid-1879048203.lock',
					])
				} finally {
					for (const child of sleepers) child.kill('SIGKILL')
					await state.remove()
				}
			},
			CASE_TIMEOUT_MS,
		)

		it(
			'bounds the runtime cache: old node copies and dead writers’ temporaries go, the current copies stay',
			async () => {
				const state = await freshStateDir()
				try {
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
					await (await provider.create()).destroy()
					await provider.close()
					const cache = join(state.dir, runtimeDirName())
					const current = (await readdir(cache)).sort()
					const hourAgo = new Date(Date.now() - 3_600_000)
					const oldCopy = join(cache, 'node-1-2-3-4')
					await writeFile(oldCopy, 'an old node')
					await writeFile(`${oldCopy}.readable`, 'an old node')
					await utimes(oldCopy, hourAgo, hourAgo)
					await utimes(`${oldCopy}.readable`, hourAgo, hourAgo)
					const fresh = join(cache, 'node-5-6-7-8')
					await writeFile(fresh, 'a copy being bound right now')
					// A pid that is not running: this test's own child, already gone.
					const gone = spawnSync('true').pid
					const temporary = join(cache, `node-9-9-9-9.tmp-${gone}-abcd`)
					await writeFile(temporary, 'half')

					const dry = await collectLocalGarbage({ stateDir: state.dir, dryRun: true })
					expect([...dry.runtimeFiles].sort()).toEqual(
						[oldCopy, `${oldCopy}.readable`, temporary].sort(),
					)
					expect(existsSync(oldCopy)).toBe(true)
					const report = await collectLocalGarbage({ stateDir: state.dir })
					expect([...report.runtimeFiles].sort()).toEqual(
						[oldCopy, `${oldCopy}.readable`, temporary].sort(),
					)
					expect((await readdir(cache)).sort()).toEqual([...current, 'node-5-6-7-8'].sort())
					// The current copies still start a sandbox without copying anything again.
					const again = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
					await (await again.create()).destroy()
					await again.close()
				} finally {
					await state.remove()
				}
			},
			CASE_TIMEOUT_MS,
		)
	},
)
