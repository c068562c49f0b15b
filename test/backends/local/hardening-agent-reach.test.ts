/**
 * The agent is out of the workload's reach: it cannot be ptraced, its environment and descriptors
 * stay closed, its listening socket cannot be duplicated, a sibling's socket is nowhere to be
 * found, and no descriptor the host did not mean to hand over reaches a command. Each attack
 * beside its positive control.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandbox,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { LocalPathOptionError } from '../../../src/backends/machine/index.js'
import { bundleSource, childEnv, type SourceBundle } from '../../helpers/bundle-source.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()

/**
 * Run inside: tries every way into process `pid` and prints one `name result` line each —
 * `ok` or the errno name. pidfd_open is syscall 434, pidfd_getfd 438 (x86-64 and arm64 alike).
 */
const REACH = `
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
def report(name, ok):
    print(name, 'ok' if ok else errno.errorcode.get(ctypes.get_errno(), 'E?'))
try:
    open('/proc/%d/environ' % pid, 'rb').read(1); print('environ ok')
except OSError as e: print('environ', errno.errorcode[e.errno])
try:
    os.listdir('/proc/%d/fd' % pid); os.readlink('/proc/%d/fd/0' % pid); print('fd ok')
except OSError as e: print('fd', errno.errorcode[e.errno])
pidfd = libc.syscall(434, pid, 0)
report('pidfd_open', pidfd >= 0)
report('pidfd_getfd', pidfd >= 0 and libc.syscall(438, pidfd, 0, 0) >= 0)
attached = libc.ptrace(16, pid, 0, 0) == 0
report('ptrace', attached)
if attached: libc.ptrace(17, pid, 0, 0)
`

function parseReach(stdout: string): Record<string, string> {
	return Object.fromEntries(
		stdout
			.trim()
			.split('\n')
			.map((line) => line.split(' ') as [string, string]),
	)
}

describe.skipIf(skip !== undefined)(
	`the agent is out of the workload's reach${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider
		let sandbox: LocalSandbox
		let removeState: () => Promise<void>

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			sandbox = await provider.create()
			await sandbox.writeFile('reach.py', REACH)
		})

		afterAll(async () => {
			await provider?.close()
			await removeState?.()
		})

		it('cannot read the agent environ or fds, pidfd_getfd its descriptors or ptrace it', async () => {
			// The shell's parent is the agent.
			const result = await sandbox.exec('sh', ['-c', 'python3 reach.py $PPID'])
			expect(result.stderr).toBe('')
			expect(parseReach(result.stdout)).toEqual({
				environ: 'EACCES',
				fd: 'EACCES',
				pidfd_open: 'ok',
				pidfd_getfd: 'EPERM',
				ptrace: 'EPERM',
			})
		})

		it("positive control: the same calls succeed against the workload's own child", async () => {
			const result = await sandbox.exec('sh', [
				'-c',
				'sleep 30 & child=$!; python3 reach.py $child; kill -KILL $child',
			])
			expect(parseReach(result.stdout)).toEqual({
				environ: 'ok',
				fd: 'ok',
				pidfd_open: 'ok',
				pidfd_getfd: 'ok',
				ptrace: 'ok',
			})
		})

		it('a command sees only stdio (and the directory ls itself opens), never the listener', async () => {
			const result = await sandbox.exec('ls', ['-l', '/proc/self/fd'])
			const links = result.stdout
				.trim()
				.split('\n')
				.slice(1)
				.map((line) => line.split(' ').slice(-3).join(' '))
			expect(links.map((link) => link.split(' ')[0]).sort()).toEqual(['0', '1', '2', '3'])
			expect(links.find((link) => link.startsWith('3 '))).toMatch(/^3 -> \/proc\/\d+\/fd$/)
		})
	},
)

describe.skipIf(skip !== undefined)(
	`sibling sandboxes with a state directory outside /tmp cannot reach each other${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider
		let a: LocalSandbox
		let b: LocalSandbox
		let stateDir = ''

		beforeAll(async () => {
			// /var/lib: bound as-is by a "--ro-bind / /" sandbox, absent from the minimal root.
			stateDir = await mkdtemp('/var/lib/namzu-sibling-test-')
			await chmod(stateDir, 0o711)
			provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			;[a, b] = await Promise.all([provider.create(), provider.create()])
		})

		afterAll(async () => {
			await provider?.close()
			if (stateDir) await rm(stateDir, { recursive: true, force: true })
		})

		it("cannot find or connect to a sibling's agent socket, while the host reaches it", async () => {
			const socket = join(stateDir, `namzu-sbx-${a.id}`, 'control', 'agent.sock')
			const probe = `const c = require('net').connect(process.argv[1]); c.on('connect', () => { console.log('connected'); process.exit(0) }); c.on('error', (e) => { console.log(e.code); process.exit(3) })`
			const fromB = await b.exec('node', ['-e', probe, socket])
			expect(fromB.stdout.trim()).toBe('ENOENT')
			const listing = await b.exec('sh', [
				'-c',
				`ls -A ${stateDir}; ls ${join(stateDir, `namzu-sbx-${a.id}`)}`,
			])
			expect(listing.stdout.trim().split('\n')).toEqual([`namzu-sbx-${b.id}`])
			expect(listing.stderr).toContain('No such file or directory')
			// Positive control: the host still drives A through that very socket.
			expect((await a.exec('echo', ['alive'])).stdout.trim()).toBe('alive')
		})

		it("runs siblings as different uids, and refuses to bind a sibling's state in by name", async () => {
			await a.exec('touch', ['a'])
			await b.exec('touch', ['b'])
			const owner = (sandbox: LocalSandbox, name: string) =>
				sandbox.exec('sh', ['-c', `stat -c %u ${name}`]).then((r) => r.stdout.trim())
			expect(await owner(a, 'a')).toBe('0')
			const { lstat } = await import('node:fs/promises')
			const uidA = (await lstat(join(a.rootDir, 'a'))).uid
			const uidB = (await lstat(join(b.rootDir, 'b'))).uid
			if (process.getuid?.() === 0) expect(uidA).not.toBe(uidB)
			const error = await provider
				.create({ readOnlyPaths: [join(stateDir, `namzu-sbx-${a.id}`)] })
				.catch((e: unknown) => e)
			expect(error).toBeInstanceOf(LocalPathOptionError)
			expect((error as LocalPathOptionError).refusal).toBe('state-dir')
		})
	},
)

describe.skipIf(skip !== undefined)(
	`a descriptor the host's own parent leaked never reaches the sandbox${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let library: SourceBundle | undefined
		let launcher: SourceBundle | undefined
		let scratch = ''

		beforeAll(async () => {
			library = await bundleSource('src/backends/local/index.ts', 'local-tier')
			launcher = await bundleSource('src/backends/machine/launch/agent-launcher.ts', 'launcher')
			scratch = await mkdtemp(join(tmpdir(), 'namzu-leak-'))
			await chmod(scratch, 0o711)
		})

		afterAll(async () => {
			await library?.remove()
			await launcher?.remove()
			if (scratch) await rm(scratch, { recursive: true, force: true })
		})

		it('a host started with descriptor 40 open (not close-on-exec) launches with /dev/null there, and commands see only stdio', async () => {
			if (!library || !launcher) throw new Error('bundle missing')
			const script = join(scratch, 'leaky-host.mjs')
			await writeFile(
				script,
				`import { readFileSync, readlinkSync } from 'node:fs'
import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
import { launchAgentProcess } from ${JSON.stringify(launcher.file)}
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: ${JSON.stringify(scratch)} })
const sandbox = await provider.create()
const inside = await sandbox.exec('sh', ['-c', 'ls /proc/self/fd'])
// What the launch chain's first program (the cgroup-join shell, setpriv, then bwrap) is handed.
const seen = ${JSON.stringify(join(scratch, 'seen'))}
const probe = launchAgentProcess({ argv: ['/bin/sh', '-c', 'readlink /proc/$$/fd/40 > ' + seen], env: {}, cwd: '/', secrets: [] })
await probe.exited
console.log(JSON.stringify({ inside: inside.stdout.trim().split('\\n'), leaked: readlinkSync('/proc/self/fd/40'), launched: readFileSync(seen, 'utf8').trim() }))
await provider.close()
`,
			)
			const leakedFile = join(scratch, 'leaked-secret')
			await writeFile(leakedFile, 'secret\n')
			const { openSync, closeSync } = await import('node:fs')
			const fd = openSync(leakedFile, 'r')
			const stdio: ('ignore' | 'pipe' | number)[] = ['ignore', 'pipe', 'pipe']
			while (stdio.length < 40) stdio.push('ignore')
			stdio.push(fd)
			const child = spawn(process.execPath, [script], { env: childEnv(), stdio })
			closeSync(fd)
			let stdout = ''
			let stderr = ''
			child.stdout?.on('data', (chunk: Buffer) => {
				stdout += chunk.toString()
			})
			child.stderr?.on('data', (chunk: Buffer) => {
				stderr += chunk.toString()
			})
			const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
			expect(code, stderr).toBe(0)
			const report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
				inside: string[]
				leaked: string
				launched: string
			}
			// Positive control: the host process really held the leaked descriptor.
			expect(report.leaked).toBe(leakedFile)
			expect(report.inside.sort()).toEqual(['0', '1', '2', '3'])
			// A launched program holds /dev/null at that number, never the leaked file.
			expect(report.launched).toBe('/dev/null')
		})
	},
)
