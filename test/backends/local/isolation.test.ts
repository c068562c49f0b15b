import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { SandboxPathEscapeError } from '../../../src/contract/errors.js'
import type { SandboxProvider } from '../../../src/contract/provider.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()

// Connects to 127.0.0.1:<port> and prints `connected` or the error code.
const CONNECT = `
const s = require('node:net').connect(Number(process.argv[1]), '127.0.0.1')
s.on('connect', () => { console.log('connected'); s.destroy() })
s.on('error', (e) => { console.log(e.code); process.exitCode = 3 })
`

describe.skipIf(skip !== undefined)(
	`a bubblewrap sandbox is isolated from the host${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: SandboxProvider
		let sandbox: Sandbox
		let open: Sandbox
		let server: Server
		let port = 0
		let removeState: () => Promise<void>
		let hostTmpFile = ''

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			hostTmpFile = join(state.dir, 'host-only-file')
			await writeFile(hostTmpFile, 'host secret')
			server = createServer((socket) => {
				socket.on('error', () => undefined)
				socket.end('hello')
			})
			await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
			const address = server.address()
			port = typeof address === 'object' && address ? address.port : 0
			provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			;[sandbox, open] = await Promise.all([
				provider.create(),
				provider.create({ egress: { kind: 'allow-all' } }),
			])
		})

		afterAll(async () => {
			await provider?.close()
			await new Promise((resolve) => server?.close(resolve))
			await removeState?.()
		})

		it('reports the linux-bwrap environment and offers no setNetworkPolicy it cannot enforce', () => {
			expect(provider.environment).toBe('linux-bwrap')
			expect(sandbox.environment).toBe('linux-bwrap')
			expect(sandbox.setNetworkPolicy).toBeUndefined()
		})

		it('under deny-all cannot connect to a host listener on 127.0.0.1', async () => {
			const result = await sandbox.exec('node', ['-e', CONNECT, String(port)])
			expect(result.stdout.trim()).toBe('ECONNREFUSED')
			expect(result.exitCode).toBe(3)
		})

		it('under allow-all cannot connect to that host listener either: 127.0.0.1 is its own loopback', async () => {
			const result = await open.exec('node', ['-e', CONNECT, String(port)])
			expect(result.stdout.trim()).toBe('ECONNREFUSED')
			expect(result.exitCode).toBe(3)
		})

		it('under deny-all sees only the loopback interface', async () => {
			// /proc/net is per network namespace (the ro-bound /sys still shows the host's).
			const result = await sandbox.exec('cat', ['/proc/self/net/dev'])
			const interfaces = result.stdout
				.split('\n')
				.slice(2)
				.map((line) => line.split(':')[0]?.trim())
				.filter((name) => name)
			expect(interfaces).toEqual(['lo'])
		})

		it.each(['/etc/namzu-x', '/usr/namzu-x', '/namzu-x'])(
			'cannot write %s outside the workspace',
			async (path) => {
				const result = await sandbox.exec('touch', [path])
				expect(result.exitCode).not.toBe(0)
				expect(result.stderr).toMatch(/Read-only file system|Permission denied/)
			},
		)

		it('has no /root to write into: the host home directories are not in the sandbox root', async () => {
			const result = await sandbox.exec('touch', ['/root/namzu-x'])
			expect(result.exitCode).not.toBe(0)
			expect(result.stderr).toMatch(/No such file or directory/)
		})

		it('has a private /var/tmp: its writes never reach the host', async () => {
			const marker = `/var/tmp/namzu-private-${Date.now()}`
			const write = await sandbox.exec('sh', ['-c', `echo x > ${marker} && cat ${marker}`])
			expect(write.stdout.trim()).toBe('x')
			const { existsSync } = await import('node:fs')
			expect(existsSync(marker)).toBe(false)
		})

		it('has a private /tmp: a host file there is invisible and its writes never reach the host', async () => {
			const look = await sandbox.exec('cat', [hostTmpFile])
			expect(look.exitCode).not.toBe(0)
			const marker = `/tmp/namzu-private-${Date.now()}`
			const write = await sandbox.exec('sh', ['-c', `echo x > ${marker} && cat ${marker}`])
			expect(write.stdout.trim()).toBe('x')
			const { existsSync } = await import('node:fs')
			expect(existsSync(marker)).toBe(false)
		})

		it('writes in the workspace land in rootDir on the host', async () => {
			const result = await sandbox.exec('sh', ['-c', 'echo made-inside > inside.txt'])
			expect(result.exitCode).toBe(0)
			expect((await sandbox.readFile('inside.txt')).toString()).toBe('made-inside\n')
			const { readFileSync } = await import('node:fs')
			expect(readFileSync(join(sandbox.rootDir, 'inside.txt'), 'utf8')).toBe('made-inside\n')
		})

		it('cannot reach a host unix socket under /run, nor the socket the host uses to reach its agent', async () => {
			const path = `/run/namzu-isolation-${process.pid}.sock`
			const server = createServer((socket) => socket.end('reached'))
			await new Promise<void>((resolve) => server.listen(path, resolve))
			try {
				const probe = `const c = require('net').connect(process.argv[1]); c.on('data', () => { console.log('reached'); process.exit(0) }); c.on('error', (e) => { console.log(e.code); process.exit(3) })`
				const result = await sandbox.exec('node', ['-e', probe, path])
				expect(result.stdout.trim()).toBe('ENOENT')
				const listing = await sandbox.exec('sh', ['-c', 'ls -a /run'])
				expect(
					listing.stdout.split('\n').filter((name) => name && name !== '.' && name !== '..'),
				).toEqual([])
			} finally {
				await new Promise((resolve) => server.close(resolve))
			}
		})

		it('cannot see host processes: /proc lists only the sandbox, without the test process', async () => {
			const result = await sandbox.exec('ls', ['/proc'])
			const pids = result.stdout.split('\n').filter((entry) => /^\d+$/.test(entry))
			expect(pids).not.toContain(String(process.pid))
			// bwrap's init, the agent, and ls itself.
			expect(pids.length).toBeLessThanOrEqual(4)
			expect(pids).toContain('1')
		})

		it('runs with every capability set empty and NoNewPrivs 1', async () => {
			const result = await sandbox.exec('cat', ['/proc/self/status'])
			const field = (name: string) =>
				new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(result.stdout)?.[1]
			expect(field('CapInh')).toMatch(/^0+$/)
			expect(field('CapPrm')).toMatch(/^0+$/)
			expect(field('CapEff')).toMatch(/^0+$/)
			expect(field('CapBnd')).toMatch(/^0+$/)
			expect(field('NoNewPrivs')).toBe('1')
		})

		it('has a writable HOME outside the workspace that never shows in listings', async () => {
			const result = await sandbox.exec('sh', [
				'-c',
				'echo h > "$HOME/.namzu-home-file" && echo "$HOME"',
			])
			expect(result.exitCode).toBe(0)
			expect(result.stdout.trim().startsWith(sandbox.rootDir)).toBe(false)
			const listed = await sandbox.listFiles(sandbox.rootDir)
			expect(listed.map((entry) => entry.path).join('\n')).not.toContain('.namzu-home-file')
		})

		it('sets the hostname and leaves the workspace as the working directory', async () => {
			expect((await sandbox.exec('hostname')).stdout.trim()).toBe('namzu-sandbox')
			expect((await sandbox.exec('pwd')).stdout.trim()).toBe(sandbox.rootDir)
		})

		describe('path escapes are refused through the Sandbox API', () => {
			beforeAll(async () => {
				await mkdir(join(sandbox.rootDir, 'sub'), { recursive: true })
				await symlink('/etc', join(sandbox.rootDir, 'sub', 'escape'))
			})

			it.each(['../outside.txt', 'sub/../../outside.txt', 'sub/escape/passwd', '/etc/passwd'])(
				'readFile(%s) rejects with SandboxPathEscapeError',
				async (path) => {
					await expect(sandbox.readFile(path)).rejects.toBeInstanceOf(SandboxPathEscapeError)
				},
			)

			it.each(['../outside.txt', 'sub/../../outside.txt', 'sub/escape/namzu-x', '/etc/namzu-x'])(
				'writeFile(%s) rejects with SandboxPathEscapeError',
				async (path) => {
					await expect(sandbox.writeFile(path, 'x')).rejects.toBeInstanceOf(SandboxPathEscapeError)
				},
			)

			it.each(['..', '../..', 'sub/escape', '/etc'])(
				'listFiles(%s) rejects with SandboxPathEscapeError',
				async (path) => {
					await expect(sandbox.listFiles(path)).rejects.toBeInstanceOf(SandboxPathEscapeError)
				},
			)
		})
	},
)
