/**
 * Who a sandbox runs as on a root host: its own unprivileged uid, so nothing it plants in a
 * caller's workspace is worth more on the host than inside, and the workspace is given back
 * exactly. Each attack beside its positive control.
 */
import { spawnSync } from 'node:child_process'
import {
	chmod,
	chown,
	lstat,
	mkdir,
	mkdtemp,
	readdir,
	readFile,
	rm,
	symlink,
	writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
	LocalStateDirUnreachableError,
} from '../../../src/backends/local/index.js'
import { adoptSandboxCgroups } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import {
	readHostClaims,
	releaseHostClaims,
	removeStateRoot,
} from '../../../src/backends/machine/claims/release-host-claims.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	destroyLocalSandbox,
	LocalWorkspaceBusyError,
	listLocalSandboxes,
} from '../../../src/backends/machine/index.js'
import { bundleSource, childEnv, type SourceBundle } from '../../helpers/bundle-source.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	cgroupDirsFor,
	crashHostAfterCreate,
	freshStateDir,
	mountsUnder,
	waitFor,
} from './local-test-support.js'

const bwrapSkip = bwrapSkipReason()
const skip =
	bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'per-sandbox uids need a root host')
const { first, count } = DEFAULT_SANDBOX_UID_RANGE
const inRange = (uid: number) => uid >= first && uid < first + count

interface EntryStat {
	readonly uid: number
	readonly gid: number
	readonly mode: number
}

/** A FIFO at `path`, made by the host (node has no mkfifo). */
async function mkfifo(path: string): Promise<void> {
	const made = spawnSync('mkfifo', [path])
	if (made.status !== 0) throw new Error(`mkfifo ${path}: ${made.stderr.toString()}`)
}

/** uid, gid and mode of every entry below `root` (symlinks not followed), by relative path. */
async function statTree(root: string): Promise<Record<string, EntryStat>> {
	const out: Record<string, EntryStat> = {}
	const walk = async (relative: string) => {
		const info = await lstat(join(root, relative))
		out[relative || '.'] = { uid: info.uid, gid: info.gid, mode: info.mode }
		if (!info.isDirectory()) return
		for (const name of await readdir(join(root, relative))) await walk(join(relative, name))
	}
	await walk('')
	return out
}

/** A caller workspace with a nested entry of a third uid and a symlink of a fourth. */
async function callerWorkspace(parent: string): Promise<string> {
	const workspace = await mkdtemp(join(parent, 'namzu-caller-ws-'))
	await chmod(workspace, 0o755)
	await mkdir(join(workspace, 'src', 'deep'), { recursive: true })
	await writeFile(join(workspace, 'src', 'deep', 'third.txt'), 'third uid\n')
	await chown(join(workspace, 'src', 'deep'), 1234, 4321)
	await chown(join(workspace, 'src', 'deep', 'third.txt'), 1234, 4321)
	await writeFile(join(workspace, 'README'), 'caller file\n', { mode: 0o640 })
	await symlink('README', join(workspace, 'link'))
	spawnSync('chown', ['-h', '2222:2222', join(workspace, 'link')])
	await mkdir(join(workspace, 'swap'))
	await writeFile(join(workspace, 'swap', 'victim'), 'v\n')
	await chown(join(workspace, 'swap', 'victim'), 1234, 4321)
	return workspace
}

/** `id -u; id -g` of `binary` run as an unprivileged host user (65534). */
function runAsNobody(binary: string): string {
	const run = spawnSync('/usr/bin/setpriv', [
		'--reuid=65534',
		'--regid=65534',
		'--clear-groups',
		binary,
		'-u',
	])
	return run.stdout.toString().trim()
}

describe.skipIf(skip !== undefined)(
	`a sandbox on a root host runs as its own unprivileged uid${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider
		let stateDir = ''
		let removeState: () => Promise<void>
		const scratch: string[] = []
		let library: SourceBundle | undefined

		beforeAll(async () => {
			const state = await freshStateDir()
			stateDir = state.dir
			removeState = state.remove
			provider = createLocalSandboxProvider({ tier: 'process', stateDir })
		})

		afterAll(async () => {
			await provider?.close()
			for (const listing of await listLocalSandboxes({ stateDir })) {
				await destroyLocalSandbox(listing.id, { stateDir }).catch(() => undefined)
			}
			for (const dir of scratch) await rm(dir, { recursive: true, force: true })
			await library?.remove()
			await removeState?.()
		})

		it('each sandbox gets its own uid from the range, locked under the state directory until destroy', async () => {
			const [a, b] = await Promise.all([provider.create(), provider.create()])
			await a.exec('touch', ['mine'])
			await b.exec('touch', ['mine'])
			const uidA = (await lstat(join(a.rootDir, 'mine'))).uid
			const uidB = (await lstat(join(b.rootDir, 'mine'))).uid
			expect(inRange(uidA) && inRange(uidB)).toBe(true)
			expect(uidA).not.toBe(uidB)
			// Inside, it is uid 0 with no capabilities.
			expect((await a.exec('id', ['-u'])).stdout.trim()).toBe('0')
			const lock = join(stateDir, 'namzu-claims', `uid-${uidA}.lock`)
			expect(JSON.parse(await readFile(lock, 'utf8'))).toMatchObject({ id: a.id })
			await a.destroy()
			await expect(lstat(lock)).rejects.toMatchObject({ code: 'ENOENT' })
			await b.destroy()
		})

		it('a setuid-root plant in a caller workspace is owned by the sandbox uid, never gives euid 0, and loses its set-id bits at destroy', async () => {
			const workspace = await callerWorkspace(tmpdir())
			scratch.push(workspace)
			const sandbox = await provider.create({ workingDirectory: workspace })
			const plant = await sandbox.exec('sh', [
				'-c',
				'cp /usr/bin/id ./rootid && chmod 6755 ./rootid && stat -c "%u %a" ./rootid',
			])
			// Inside it looks like a setuid-root file…
			expect(plant.stdout.trim()).toBe('0 6755')
			const planted = join(workspace, 'rootid')
			const during = await lstat(planted)
			// …on the host it is the sandbox uid's, so running it gives that uid, not root.
			expect(inRange(during.uid)).toBe(true)
			expect(during.mode & 0o6000).toBe(0o6000)
			expect(runAsNobody(planted)).toBe(String(during.uid))
			await sandbox.destroy()
			const after = await lstat(planted)
			expect(after.uid).toBe(0)
			expect(after.mode & 0o6000).toBe(0)
			// Positive control: the plant is still an executable the caller can run, as themself.
			expect(runAsNobody(planted)).toBe('65534')
		})

		it('gives a caller workspace back exactly: every original owner (a nested third uid, a symlink of a fourth), the root owner for what the sandbox made', async () => {
			const workspace = await callerWorkspace(tmpdir())
			scratch.push(workspace)
			const before = await statTree(workspace)
			const sandbox = await provider.create({ workingDirectory: workspace })
			const inside = await sandbox.exec('sh', [
				'-c',
				'stat -c %u src/deep/third.txt README; echo changed >> src/deep/third.txt && mkdir -p new/dir && echo n > new/dir/f && mkdir sg && chmod 2775 sg',
			])
			// The whole workspace is the sandbox's (uid 0 inside) while it lives, and writable.
			expect(inside.stdout.trim().split('\n')).toEqual(['0', '0'])
			expect(inside.exitCode).toBe(0)
			const held = await lstat(join(workspace, 'src', 'deep', 'third.txt'))
			expect(inRange(held.uid)).toBe(true)
			await sandbox.destroy()
			const after = await statTree(workspace)
			for (const [path, stat] of Object.entries(before)) expect(after[path], path).toEqual(stat)
			for (const path of ['new', 'new/dir', 'new/dir/f', 'sg']) {
				expect(after[path]?.uid, path).toBe(0)
				expect(after[path]?.gid, path).toBe(0)
				expect((after[path]?.mode ?? 0) & 0o6000, path).toBe(0)
			}
			expect(await readFile(join(workspace, 'src', 'deep', 'third.txt'), 'utf8')).toBe(
				'third uid\nchanged\n',
			)
		})

		it('hostile entries planted in a caller workspace are never followed at give-back: FIFOs, sockets and devices removed, a symlink to /etc/shadow given to the caller as a link', async () => {
			const workspace = await callerWorkspace(tmpdir())
			scratch.push(workspace)
			// The caller is an ordinary user: what the sandbox made comes back as theirs, never root's.
			await chown(workspace, 3333, 3333)
			await mkfifo(join(workspace, 'callers-fifo'))
			const shadowBefore = await lstat('/etc/shadow')
			const sandbox = await provider.create({ workingDirectory: workspace })
			const plant = await sandbox.exec('sh', [
				'-c',
				[
					'ln -s /etc/shadow shadow-link',
					'ln -s /etc shadow-dir',
					'mkfifo fifo',
					'mkdir -p nested && mkfifo nested/fifo',
					`python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')"`,
					// A whiteout (char 0:0) needs no capability; anything else is refused anyway.
					'mknod whiteout c 0 0 2>/dev/null || true',
					'mkdir made && echo data > made/file',
					'ls -A',
				].join('\n'),
			])
			expect(plant.exitCode, plant.stderr).toBe(0)
			expect(plant.stdout).toMatch(/fifo\n/)
			expect(plant.stdout).toMatch(/sock\n/)
			await sandbox.destroy()
			const shadowAfter = await lstat('/etc/shadow')
			expect([shadowAfter.uid, shadowAfter.gid, shadowAfter.mode, shadowAfter.ino]).toEqual([
				shadowBefore.uid,
				shadowBefore.gid,
				shadowBefore.mode,
				shadowBefore.ino,
			])
			const entries = await readdir(workspace)
			for (const gone of ['fifo', 'sock', 'whiteout']) expect(entries).not.toContain(gone)
			expect(await readdir(join(workspace, 'nested'))).toEqual([])
			// Symlinks are content (node_modules/.bin, a checkout's links): kept, owned by the caller.
			for (const link of ['shadow-link', 'shadow-dir']) {
				const info = await lstat(join(workspace, link))
				expect(info.isSymbolicLink(), link).toBe(true)
				expect([info.uid, info.gid], link).toEqual([3333, 3333])
			}
			expect((await lstat('/etc')).uid).toBe(0)
			// The caller's own FIFO was never the sandbox's, so it is still there, still theirs.
			const callers = await lstat(join(workspace, 'callers-fifo'))
			expect(callers.isFIFO()).toBe(true)
			expect(callers.uid).toBe(0)
			// Positive control: what the sandbox made of files and directories is the caller's.
			for (const path of ['made', 'made/file', 'nested']) {
				const info = await lstat(join(workspace, path))
				expect([info.uid, info.gid], path).toEqual([3333, 3333])
			}
			expect(await readFile(join(workspace, 'made', 'file'), 'utf8')).toBe('data\n')
		})

		it('a directory the sandbox swaps for a symlink never redirects the give-back onto host files', async () => {
			const workspace = await callerWorkspace(tmpdir())
			const target = await mkdtemp(join(tmpdir(), 'namzu-swap-target-'))
			scratch.push(workspace, target)
			await writeFile(join(target, 'victim'), 'host file\n')
			const sandbox = await provider.create({ workingDirectory: workspace })
			const swap = await sandbox.exec('sh', ['-c', `rm -rf swap && ln -s ${target} swap`])
			expect(swap.exitCode).toBe(0)
			await sandbox.destroy()
			const victim = await lstat(join(target, 'victim'))
			expect([victim.uid, victim.gid]).toEqual([0, 0])
			// Positive control: the recorded entry is given back where it still is the real one.
			expect((await lstat(join(workspace, 'src', 'deep', 'third.txt'))).uid).toBe(1234)
		})

		it('a caller workspace under a directory the sandbox uid cannot search (/root) works through a staging bind, unmounted at destroy', async () => {
			const workspace = await callerWorkspace('/root')
			scratch.push(workspace)
			const before = await statTree(workspace)
			const sandbox = await provider.create({ workingDirectory: workspace })
			const result = await sandbox.exec('sh', ['-c', 'cat README && echo x > made && pwd'])
			expect(result.stdout.trim().split('\n')).toEqual(['caller file', workspace])
			expect(mountsUnder(stateDir)).toHaveLength(1)
			await sandbox.destroy()
			expect(mountsUnder(stateDir)).toEqual([])
			const after = await statTree(workspace)
			for (const [path, stat] of Object.entries(before)) expect(after[path], path).toEqual(stat)
			expect(after.made?.uid).toBe(0)
		})

		it('refuses a second sandbox on a caller workspace another one holds, and leaves the first untouched', async () => {
			const workspace = await callerWorkspace(tmpdir())
			scratch.push(workspace)
			const sandbox = await provider.create({ workingDirectory: workspace })
			await sandbox.exec('sh', ['-c', 'mkdir shared && chmod 2775 shared'])
			const error = await provider.create({ workingDirectory: workspace }).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(LocalWorkspaceBusyError)
			expect((await sandbox.exec('touch', ['still-mine'])).exitCode).toBe(0)
			// The refused create touched nothing of the first sandbox's.
			expect((await lstat(join(workspace, 'shared'))).mode & 0o2000).toBe(0o2000)
			expect(inRange((await lstat(join(workspace, 'README'))).uid)).toBe(true)
			await sandbox.destroy()
			expect((await lstat(join(workspace, 'README'))).uid).toBe(0)
		})

		it("a kept-alive sandbox's descriptor names its uid and ownership record; destroy by id from the record gives the workspace back", async () => {
			const workspace = await callerWorkspace(tmpdir())
			scratch.push(workspace)
			const before = await statTree(workspace)
			const sandbox = await provider.create({ workingDirectory: workspace, keepAlive: true })
			await sandbox.exec('touch', ['kept'])
			const listing = (await listLocalSandboxes({ stateDir })).find((l) => l.id === sandbox.id)
			const claims = listing?.descriptor.claims
			expect(inRange(claims?.identity?.uid ?? 0)).toBe(true)
			expect(claims?.workspace?.path).toBe(workspace)
			expect(claims?.workspace?.recordPath).toBe(
				join(stateDir, `namzu-sbx-${sandbox.id}`, 'workspace-owners'),
			)
			expect(await destroyLocalSandbox(sandbox.id, { stateDir })).toBe(true)
			const after = await statTree(workspace)
			for (const [path, stat] of Object.entries(before)) expect(after[path], path).toEqual(stat)
			expect(after.kept?.uid).toBe(0)
			expect(await readdir(join(stateDir, 'namzu-claims'))).toEqual([])
		})

		it('after the host is SIGKILLed, the host-claims record alone undoes everything, and repeating it is harmless', async () => {
			library ??= await bundleSource('src/backends/local/index.ts', 'local-tier')
			const workspace = await callerWorkspace('/root')
			scratch.push(workspace)
			const before = await statTree(workspace)
			const { id, pid } = await crashHostAfterCreate(
				library,
				stateDir,
				`sandbox = await provider.create({ workingDirectory: ${JSON.stringify(workspace)} })
await sandbox.exec('sh', ['-c', 'echo planted > planted && chmod 4755 planted'])`,
			)
			const stateRoot = join(stateDir, `namzu-sbx-${id}`)
			// The crash left it all: the workspace held by the sandbox uid, the staging mount, the lock.
			expect(inRange((await lstat(join(workspace, 'README'))).uid)).toBe(true)
			expect(mountsUnder(stateRoot)).toHaveLength(1)
			const claims = await readHostClaims(id, stateRoot)
			expect(claims?.workspace?.path).toBe(workspace)
			// It names the host that made it, so a reaper can tell that host is gone.
			expect(claims?.owner?.pid).toBe(pid)
			await waitFor(() => spawnSync('pgrep', ['-f', stateRoot]).status !== 0)
			if (claims === undefined) throw new Error('no host-claims record')
			await releaseHostClaims(claims)
			await releaseHostClaims(claims)
			await removeStateRoot(stateRoot)
			await adoptSandboxCgroups(cgroupDirsFor([id])).remove()
			expect(mountsUnder(stateRoot)).toEqual([])
			const after = await statTree(workspace)
			for (const [path, stat] of Object.entries(before)) expect(after[path], path).toEqual(stat)
			expect(after.planted?.uid).toBe(0)
			expect((after.planted?.mode ?? 0) & 0o6000).toBe(0)
			expect(await readdir(join(stateDir, 'namzu-claims'))).toEqual([])
		})

		it('refuses a state directory the sandbox uids cannot pass through, by name, leaving nothing', async () => {
			const closed = await mkdtemp(join(tmpdir(), 'namzu-closed-state-'))
			scratch.push(closed)
			const refusing = createLocalSandboxProvider({ tier: 'process', stateDir: closed })
			const error = await refusing.create().catch((e: unknown) => e)
			await refusing.close()
			expect(error).toBeInstanceOf(LocalStateDirUnreachableError)
			expect((error as LocalStateDirUnreachableError).blockedAt).toBe(closed)
			expect(await readdir(join(closed, 'namzu-claims'))).toEqual([])
			expect((await readdir(closed)).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
		})
	},
)

describe.skipIf(skip !== undefined)(
	`a sandbox started by a non-root host runs as that user, its agent still out of reach${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let library: SourceBundle | undefined
		let scratch = ''

		beforeAll(async () => {
			library = await bundleSource('src/backends/local/index.ts', 'local-tier')
			await chmod(library.dir, 0o755)
			await chmod(library.file, 0o644)
			scratch = await mkdtemp(join(tmpdir(), 'namzu-unprivileged-host-'))
			await chmod(scratch, 0o755)
			await mkdir(join(scratch, 'state'), { mode: 0o700 })
			await chown(join(scratch, 'state'), 65534, 65534)
		})

		afterAll(async () => {
			await library?.remove()
			if (scratch) await rm(scratch, { recursive: true, force: true })
		})

		it('files it makes are the host user’s, the agent environ stays closed, and nothing of root is involved', async () => {
			if (!library) throw new Error('bundle missing')
			const script = join(scratch, 'host.mjs')
			await writeFile(
				script,
				`import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
// This user has no delegated cgroup, so the default bounds cannot be enforced (refused by name
// otherwise, as default-limits.test.ts shows): the identity is what is under test here.
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: ${JSON.stringify(join(scratch, 'state'))}, defaultLimits: 'best-effort' })
const sandbox = await provider.create()
const reach = await sandbox.exec('sh', ['-c', 'cat /proc/$PPID/environ > /dev/null && echo reachable || echo unreachable; id -u; touch made'])
const { statSync } = await import('node:fs')
const owner = statSync(sandbox.rootDir + '/made').uid
console.log(JSON.stringify({ owner, lines: reach.stdout.trim().split('\\n') }))
await sandbox.destroy()
await provider.close()
`,
			)
			await chmod(script, 0o644)
			const run = spawnSync(
				'/usr/bin/setpriv',
				['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, script],
				{ env: childEnv({ HOME: scratch }), encoding: 'utf8', timeout: 60_000 },
			)
			expect(run.status, run.stderr).toBe(0)
			const report = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as {
				owner: number
				lines: string[]
			}
			expect(report.lines).toEqual(['unreachable', '0'])
			expect(report.owner).toBe(65534)
			// No per-sandbox uid without root: no claims directory was made.
			expect(await readdir(join(scratch, 'state'))).toEqual([`namzu-runtime-65534`])
		})
	},
)
