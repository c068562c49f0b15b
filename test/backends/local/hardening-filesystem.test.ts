/**
 * What a sandbox sees of the host's files: a minimal root. Each attack beside its positive control.
 */
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandbox,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { LocalPathOptionError } from '../../../src/backends/machine/index.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir, mountsUnder } from './local-test-support.js'

const skip = bwrapSkipReason()
const CHECKOUT = resolve(import.meta.dirname, '../../..')

describe.skipIf(skip !== undefined)(
	`a sandbox sees a minimal root, not the host's${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider
		let sandbox: LocalSandbox
		let stateDir = ''
		let removeState: () => Promise<void>
		const marker = randomBytes(4).toString('hex')
		const checkoutSecret = join(CHECKOUT, `.namzu-test-secret-${marker}`)
		const rootSecret = `/root/.namzu-test-secret-${marker}`
		let toolDir = ''

		beforeAll(async () => {
			const state = await freshStateDir()
			stateDir = state.dir
			removeState = state.remove
			await writeFile(checkoutSecret, 'checkout secret', { mode: 0o600 })
			await writeFile(rootSecret, 'root secret', { mode: 0o600 })
			// A "toolchain": readable files, one root-only file, one file and one directory to hide.
			toolDir = await mkdtemp(join(tmpdir(), 'namzu-tool-'))
			await chmod(toolDir, 0o755)
			await writeFile(join(toolDir, 'tool.sh'), 'echo tool ran\n', { mode: 0o644 })
			await writeFile(join(toolDir, 'root-only'), 'root only\n', { mode: 0o600 })
			await writeFile(join(toolDir, 'hidden-file'), 'hidden\n', { mode: 0o644 })
			await mkdir(join(toolDir, 'hidden-dir'), { mode: 0o755 })
			await writeFile(join(toolDir, 'hidden-dir', 'inside'), 'x\n', { mode: 0o644 })
			provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			sandbox = await provider.create()
		})

		afterAll(async () => {
			await provider?.close()
			await rm(checkoutSecret, { force: true })
			await rm(rootSecret, { force: true })
			if (toolDir) await rm(toolDir, { recursive: true, force: true })
			await removeState?.()
		})

		async function sh(target: LocalSandbox, script: string) {
			return target.exec('sh', ['-c', script])
		}

		it('cannot read /etc/shadow (masked), while /etc/passwd reads as usual', async () => {
			const shadow = await sh(sandbox, 'cat /etc/shadow; cat /etc/gshadow')
			expect(shadow.stdout).toBe('')
			const passwd = await sh(sandbox, 'cat /etc/passwd')
			expect(passwd.exitCode).toBe(0)
			expect(passwd.stdout).toMatch(/^root:/m)
		})

		it('does not have the checkout it was started from, nor a root 0600 file in it', async () => {
			const checkout = await sh(sandbox, `ls ${CHECKOUT}`)
			expect(checkout.exitCode).not.toBe(0)
			expect(checkout.stderr).toContain('No such file or directory')
			const secret = await sh(sandbox, `cat ${checkoutSecret}`)
			expect(secret.exitCode).not.toBe(0)
			expect(secret.stdout).not.toContain('checkout secret')
		})

		it.each(['/root', '/home', '/srv', '/mnt', '/opt', '/var/lib', '/boot'])(
			'has no host %s',
			async (path) => {
				const listing = await sh(sandbox, `ls -A ${path}`)
				expect(listing.exitCode).not.toBe(0)
				expect(listing.stderr).toContain('No such file or directory')
			},
		)

		it('cannot read a root-only file under /root (there is no /root), yet node and python3 run and the workspace is writable', async () => {
			const secret = await sh(sandbox, `cat ${rootSecret}`)
			expect(secret.stdout).toBe('')
			expect(secret.stderr).toContain('No such file or directory')
			const node = await sandbox.exec('node', ['-e', 'console.log(21 * 2)'])
			expect(node.stdout.trim()).toBe('42')
			const python = await sandbox.exec('python3', ['-c', 'print(6 * 7)'])
			expect(python.stdout.trim()).toBe('42')
			const write = await sh(sandbox, 'echo made > made.txt && cat made.txt')
			expect(write.stdout.trim()).toBe('made')
		})

		it('cannot create anything in the root itself', async () => {
			const result = await sh(sandbox, 'touch /namzu-x; mkdir /newdir; ls -d /namzu-x /newdir')
			expect(result.stderr).toMatch(/touch: cannot touch '\/namzu-x': Read-only file system/)
			expect(result.stderr).toMatch(
				/mkdir: cannot create directory .\/newdir.: Read-only file system/,
			)
			expect(result.stdout).toBe('')
		})

		it('sees of /sys only the CPU topology: CPU counting works, host interfaces and cgroups are absent', async () => {
			const count = String(cpus().length)
			const result = await sh(
				sandbox,
				"nproc; node -e 'console.log(require(\"os\").cpus().length)'; python3 -c 'import os; print(os.cpu_count())'",
			)
			expect(result.stdout.trim().split('\n')).toEqual([count, count, count])
			const sys = await sh(sandbox, 'ls /sys; ls /sys/class/net; ls /sys/fs/cgroup')
			expect(sys.stdout.trim()).toBe('devices')
			expect(sys.stderr).toContain('/sys/class/net')
			expect(sys.stderr).toContain('/sys/fs/cgroup')
		})

		it("shows of the state directory only the sandbox's own workspace path: no socket, record, runtime or sibling", async () => {
			const own = sandbox.rootDir.split('/').slice(-2, -1)[0] ?? ''
			const base = await sh(sandbox, `ls -A ${stateDir}`)
			expect(base.stdout.trim().split('\n')).toEqual([own])
			const root = await sh(sandbox, `ls -A ${join(stateDir, own)}`)
			expect(root.stdout.trim().split('\n')).toEqual(['workspace'])
			const runtime = await sh(
				sandbox,
				`ls ${join(stateDir, `namzu-runtime-${process.getuid?.() ?? 0}`)}`,
			)
			expect(runtime.exitCode).not.toBe(0)
			// The host side does hold all of these.
			expect((await readdir(join(stateDir, own))).sort()).toEqual(
				expect.arrayContaining(['control', 'host-claims.json', 'workspace']),
			)
		})

		it("cannot read the agent's node or bundle copies (the workload's node is another, readable one)", async () => {
			const result = await sh(
				sandbox,
				'cat /.namzu/node > /dev/null; echo "node: $(command -v node)"',
			)
			expect(result.stderr).toContain('Permission denied')
			expect(result.stdout.trim()).toBe(`node: ${process.execPath}`)
		})

		it('a caller workspace leaves no trace of the state directory at all', async () => {
			const mine = await mkdtemp(join(tmpdir(), 'namzu-own-ws-'))
			const own = await provider.create({ workingDirectory: mine })
			try {
				const listing = await sh(own, `ls ${stateDir}`)
				expect(listing.exitCode).not.toBe(0)
				expect(listing.stderr).toContain('No such file or directory')
				expect((await sh(own, 'pwd')).stdout.trim()).toBe(mine)
			} finally {
				await own.destroy()
				await rm(mine, { recursive: true, force: true })
			}
		})

		it('readOnlyPaths shows a toolchain read-only (its root-only file stays unreadable); hiddenPaths masks parts of it', async () => {
			const tooled = await provider.create({
				readOnlyPaths: [toolDir],
				hiddenPaths: [join(toolDir, 'hidden-file'), join(toolDir, 'hidden-dir')],
			})
			try {
				const run = await sh(tooled, `sh ${join(toolDir, 'tool.sh')}`)
				expect(run.stdout.trim()).toBe('tool ran')
				const write = await sh(tooled, `touch ${join(toolDir, 'new')}`)
				expect(write.stderr).toContain('Read-only file system')
				const rootOnly = await sh(tooled, `cat ${join(toolDir, 'root-only')}`)
				expect(rootOnly.stderr).toContain('Permission denied')
				const hidden = await sh(
					tooled,
					`cat ${join(toolDir, 'hidden-file')}; ls -A ${join(toolDir, 'hidden-dir')}`,
				)
				expect(hidden.stdout).toBe('')
				// Without the option, the toolchain is not there at all.
				expect((await sh(sandbox, `ls ${toolDir}`)).exitCode).not.toBe(0)
			} finally {
				await tooled.destroy()
			}
		})

		it.each([
			['missing', () => ({ readOnlyPaths: [join(tmpdir(), `namzu-missing-${marker}`)] })],
			['state-dir', () => ({ readOnlyPaths: [stateDir] })],
			['state-dir', () => ({ readOnlyPaths: [tmpdir()] })],
			['not-absolute', () => ({ hiddenPaths: ['etc/shadow'] })],
			['dot-dot', () => ({ readOnlyPaths: ['/usr/../root'] })],
		])('refuses a %s path option by name and leaves nothing behind', async (refusal, config) => {
			// The live sandbox's own mounts (its workspace on the copy-on-write volume) stay as they were.
			const mountsBefore = mountsUnder(stateDir)
			const error = await provider.create(config()).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(LocalPathOptionError)
			expect((error as LocalPathOptionError).refusal).toBe(refusal)
			// Only the one sandbox of this file is there: its state root and (as root) its uid lock.
			const roots = (await readdir(stateDir)).filter((name) => name.startsWith('namzu-sbx-'))
			expect(roots).toHaveLength(1)
			expect(mountsUnder(stateDir)).toEqual(mountsBefore)
			if (process.getuid?.() === 0) {
				expect(await readdir(join(stateDir, 'namzu-claims'))).toHaveLength(1)
			}
		})
	},
)
