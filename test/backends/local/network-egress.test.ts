import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, connect as netConnect, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
	openLocalSandbox,
} from '../../../src/backends/local/index.js'
import {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
} from '../../../src/backends/machine/network/network-errors.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { bundleSource, childEnv } from '../../helpers/bundle-source.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	freshStateDir,
	processesMentioning,
	sandboxEntries,
	stateDirIds,
	waitFor,
} from './local-test-support.js'
import { type StandInInternet, startStandInInternet } from './stand-in-internet.js'

const run = promisify(execFile)
const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')

// `tcp HOST PORT` or `unix PATH` (`@name` = the abstract name): prints `reached <reply>` or the
// error code, and never waits more than 5 s.
const PROBE = `
const net = require('node:net')
const [kind, a, b] = process.argv.slice(1)
const s = kind === 'tcp' ? net.connect(Number(b), a) : net.connect(a.startsWith('@') ? '\\0' + a.slice(1) : a)
s.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
s.on('data', (d) => { console.log('reached ' + d); process.exit(0) })
s.on('error', (e) => { console.log(e.code); process.exit(0) })
`

async function probe(sandbox: Sandbox, ...target: string[]): Promise<string> {
	const result = await sandbox.exec('node', ['-e', PROBE, ...target], { timeout: 10_000 })
	return result.stdout.trim()
}

function hostProbe(...target: string[]): Promise<string> {
	return new Promise((resolve) => {
		const [kind, a = '', b = '0'] = target
		const socket =
			kind === 'tcp'
				? netConnect(Number(b), a)
				: netConnect(a.startsWith('@') ? `\0${a.slice(1)}` : a)
		socket.setTimeout(5000, () => resolve('TIMEOUT'))
		socket.on('data', (data) => {
			resolve(`reached ${data}`)
			socket.destroy()
		})
		socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
	})
}

function listen(server: Server, port: number | string, host?: string): Promise<number> {
	return new Promise((resolve, reject) => {
		server.once('error', reject)
		const ready = () => {
			const address = server.address()
			resolve(typeof address === 'object' && address ? address.port : 0)
		}
		if (typeof port === 'string') server.listen(port, ready)
		else server.listen(port, host, ready)
	})
}

function hostServer(): Server {
	return createServer((socket) => {
		socket.on('error', () => undefined)
		socket.end('host')
	})
}

/** The host's first non-loopback IPv4 address other than the stand-in's veth. */
function hostPrimaryAddress(except: string): string | undefined {
	for (const entries of Object.values(networkInterfaces())) {
		for (const entry of entries ?? []) {
			if (entry.family === 'IPv4' && !entry.internal && entry.address !== except) {
				return entry.address
			}
		}
	}
	return undefined
}

/** Whether `pid` has exited (a zombie waiting for its reaper counts as exited). */
function isGone(pid: number): boolean {
	try {
		return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true
	} catch {
		return true
	}
}

/** Host pids (and their `comm`) of the processes in a sandbox's pids group. */
async function sandboxProcesses(id: string): Promise<{ pid: number; comm: string }[]> {
	const procs = await readFile(`/sys/fs/cgroup/pids/namzu-sbx-${id}/cgroup.procs`, 'utf8')
	const found: { pid: number; comm: string }[] = []
	for (const line of procs.split('\n').filter((entry) => entry !== '')) {
		const comm = await readFile(`/proc/${line}/comm`, 'utf8').catch(() => '')
		found.push({ pid: Number(line), comm: comm.trim() })
	}
	return found
}

describe.skipIf(skip !== undefined)(
	`network: every sandbox has its own namespace; allow-all reaches the world but never the host${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider
		let open: Sandbox
		let closed: Sandbox
		let internet: StandInInternet
		let removeState: () => Promise<void>
		let stateDir = ''
		let socketDir = ''
		const loopbackV4 = hostServer()
		const loopbackV6 = hostServer()
		const anyAddress = hostServer()
		const abstract = hostServer()
		const tmpSocket = hostServer()
		const visibleSocket = hostServer()
		const ports = { v4: 0, v6: 0, any: 0 }
		const abstractName = `@namzu-net-test-${process.pid}`
		let tmpSocketPath = ''
		let visibleSocketPath = ''

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			stateDir = state.dir
			// Before any sandbox: the guard refuses what the host has when the sandbox is created.
			internet = await startStandInInternet()
			ports.v4 = await listen(loopbackV4, 0, '127.0.0.1')
			ports.v6 = await listen(loopbackV6, 0, '::1')
			ports.any = await listen(anyAddress, 0, '0.0.0.0')
			await listen(abstract, `\0${abstractName.slice(1)}`)
			tmpSocketPath = join(stateDir, 'host.sock')
			await listen(tmpSocket, tmpSocketPath)
			socketDir = await mkdtemp('/var/tmp/namzu-net-socket-')
			// Listable by the sandbox's uid, so what stops it is the socket's own mode alone.
			await chmod(socketDir, 0o755)
			visibleSocketPath = join(socketDir, 'host.sock')
			await listen(visibleSocket, visibleSocketPath)
			provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			;[open, closed] = await Promise.all([
				provider.create({ egress: { kind: 'allow-all' } }),
				provider.create(),
			])
		})

		afterAll(async () => {
			await provider?.close()
			for (const server of [
				loopbackV4,
				loopbackV6,
				anyAddress,
				abstract,
				tmpSocket,
				visibleSocket,
			]) {
				await new Promise((resolve) => server.close(resolve))
			}
			await internet?.close()
			if (socketDir !== '') await rm(socketDir, { recursive: true, force: true })
			await removeState?.()
		})

		it("starting allow-all leaves the host's named network namespaces (ip netns) enterable", async () => {
			const named = `nzhost-${process.pid}`
			execFileSync('ip', ['netns', 'add', named])
			try {
				execFileSync('ip', ['netns', 'exec', named, 'true'])
				// slirp4netns's own sandbox detaches its old root: nothing of that may reach the host.
				const more = await provider.create({ egress: { kind: 'allow-all' } })
				try {
					expect(
						spawnSync('ip', ['netns', 'exec', named, 'true'], { encoding: 'utf8' }).stderr,
					).toBe('')
					// Positive control: the new sandbox's network works.
					expect(await probe(more, 'tcp', internet.address, String(internet.port))).toBe(
						'reached internet',
					)
				} finally {
					await more.destroy()
				}
			} finally {
				spawnSync('ip', ['netns', 'del', named])
			}
		})

		it('allow-all reaches the stand-in internet (a machine that is not the host)', async () => {
			expect(await probe(open, 'tcp', internet.address, String(internet.port))).toBe(
				'reached internet',
			)
		})

		it('deny-all reaches nothing: no route to the stand-in internet', async () => {
			expect(await probe(closed, 'tcp', internet.address, String(internet.port))).toBe(
				'ENETUNREACH',
			)
		})

		it.each([
			['127.0.0.1', 'v4'],
			['::1', 'v6'],
		] as const)(
			'neither reaches a host listener on %s (each sandbox has its own loopback); the host does',
			async (address, key) => {
				expect(await hostProbe('tcp', address, String(ports[key]))).toBe('reached host')
				expect(await probe(open, 'tcp', address, String(ports[key]))).toBe('ECONNREFUSED')
				expect(await probe(closed, 'tcp', address, String(ports[key]))).toBe('ECONNREFUSED')
			},
		)

		it("allow-all is refused at once on the host's own addresses (a listener on 0.0.0.0)", async () => {
			const primary = hostPrimaryAddress(internet.hostSideAddress)
			const addresses = [internet.hostSideAddress, ...(primary ? [primary] : [])]
			for (const address of addresses) {
				expect(await hostProbe('tcp', address, String(ports.any))).toBe('reached host')
				expect(await probe(open, 'tcp', address, String(ports.any))).toBe('ECONNREFUSED')
				expect(await probe(closed, 'tcp', address, String(ports.any))).toBe('ENETUNREACH')
			}
		})

		it("allow-all is refused on slirp's host alias and on link-local (cloud metadata)", async () => {
			expect(await probe(open, 'tcp', '10.0.2.2', String(ports.any))).toBe('ECONNREFUSED')
			expect(await probe(open, 'tcp', '169.254.169.254', '80')).toBe('ECONNREFUSED')
		})

		it('allow-all has no IPv6 beyond loopback', async () => {
			const v6 = Object.values(networkInterfaces())
				.flatMap((entries) => entries ?? [])
				.find(
					(entry) =>
						entry.family === 'IPv6' && !entry.internal && !entry.address.startsWith('fe80'),
				)
			const target = v6?.address ?? '2001:db8::1'
			expect(['ENETUNREACH', 'ECONNREFUSED', 'EHOSTUNREACH']).toContain(
				await probe(open, 'tcp', target, String(ports.any)),
			)
		})

		it('neither reaches an abstract unix socket of the host (abstract names are per network namespace)', async () => {
			expect(await hostProbe('unix', abstractName)).toBe('reached host')
			expect(await probe(open, 'unix', abstractName)).toBe('ECONNREFUSED')
			expect(await probe(closed, 'unix', abstractName)).toBe('ECONNREFUSED')
		})

		it('neither reaches a host unix socket file under /tmp (private /tmp)', async () => {
			expect(await hostProbe('unix', tmpSocketPath)).toBe('reached host')
			expect(await probe(open, 'unix', tmpSocketPath)).toBe('ENOENT')
			expect(await probe(closed, 'unix', tmpSocketPath)).toBe('ENOENT')
		})

		it('a host unix socket file in a directory the sandbox sees read-only is not connectable', async (context) => {
			const sandbox = await provider.create({ readOnlyPaths: [socketDir] })
			try {
				// connect() needs write permission on the socket file, which a read-only bind does not
				// take away: only a sandbox uid that is not the socket owner's refuses it.
				await sandbox.exec('touch', ['uid-probe'])
				const owner = (await stat(join(sandbox.rootDir, 'uid-probe'))).uid
				if (owner === (await stat(visibleSocketPath)).uid) {
					context.skip(
						'the sandbox runs as the socket owner here (a non-root host): no uid of its own',
					)
				}
				expect((await sandbox.exec('ls', [socketDir])).stdout).toContain('host.sock')
				expect(await hostProbe('unix', visibleSocketPath)).toBe('reached host')
				expect(['EACCES', 'ENOENT', 'ECONNREFUSED']).toContain(
					await probe(sandbox, 'unix', visibleSocketPath),
				)
			} finally {
				await sandbox.destroy()
			}
		})

		it('openTcpConnection lands inside the sandbox: a host service on that port is not reached', async () => {
			for (const sandbox of [open, closed]) {
				await expect(sandbox.openTcpConnection?.({ port: ports.v4 })).rejects.toThrow()
				const controller = new AbortController()
				let output = ''
				const running = sandbox.exec(
					'node',
					[
						'-e',
						`require('net').createServer((s) => s.end('inside')).listen(${ports.v4}, '127.0.0.1', () => console.log('listening'))`,
					],
					{
						signal: controller.signal,
						onOutput: ({ data }) => {
							output += data
						},
					},
				)
				try {
					await waitFor(() => output.includes('listening'))
					const connection = await sandbox.openTcpConnection?.({ port: ports.v4 })
					if (!connection) throw new Error('no openTcpConnection')
					let reply = ''
					connection.onData((chunk) => {
						reply += Buffer.from(chunk).toString()
					})
					await waitFor(() => reply === 'inside')
					connection.destroy()
				} finally {
					controller.abort()
					await running
				}
			}
		})

		it('the workload cannot change the guard: nft inside fails and the host stays refused', async () => {
			const flush = await open.exec('nft', ['flush', 'ruleset'])
			expect(flush.exitCode).not.toBe(0)
			expect(flush.stderr).toMatch(/Operation not permitted/)
			const down = await open.exec('sh', ['-c', 'ip link set tap0 down; ip route del default'])
			expect(down.stderr).toMatch(/Operation not permitted/)
			expect(await probe(open, 'tcp', internet.hostSideAddress, String(ports.any))).toBe(
				'ECONNREFUSED',
			)
			expect(await probe(open, 'tcp', internet.address, String(internet.port))).toBe(
				'reached internet',
			)
		})

		it("allow-all resolves through slirp's forwarder only; deny-all resolution fails without waiting", async () => {
			const conf = await open.exec('cat', ['/etc/resolv.conf'])
			expect(conf.stdout).toBe('nameserver 10.0.2.3\n')
			const lookup = await closed.exec('getent', ['hosts', 'example.com'], { timeout: 5000 })
			expect(lookup.timedOut).toBe(false)
			expect(lookup.exitCode).not.toBe(0)
		})

		it('allow-all sandboxes started back to back with deny-all ones all come up (no loopback race)', async () => {
			for (let round = 0; round < 12; round++) {
				const egress = round % 2 === 0 ? 'allow-all' : 'deny-all'
				const sandbox = await provider.create({ egress: { kind: egress } })
				expect((await sandbox.exec('true')).exitCode).toBe(0)
				await sandbox.destroy()
			}
		})

		it('a kept-alive allow-all sandbox keeps its network and its guard after its host exits', async () => {
			const library = await bundleSource('src/backends/local/index.ts', 'local-tier')
			try {
				const script = join(library.dir, 'kept-alive-host.mjs')
				await writeFile(
					script,
					`import { createLocalSandboxProvider } from ${JSON.stringify(library.file)}
const provider = createLocalSandboxProvider({ tier: 'process', stateDir: process.argv[2] })
const sandbox = await provider.create({ keepAlive: true, keepAliveMs: 60000, egress: { kind: 'allow-all' } })
console.log(sandbox.id)
process.exit(0)
`,
				)
				const { stdout } = await run(process.execPath, [script, stateDir], { env: childEnv() })
				const sandbox = await openLocalSandbox(stdout.trim(), { stateDir })
				const slirp = (await sandboxProcesses(sandbox.id)).find((p) => p.comm === 'slirp4netns')
				if (!slirp) throw new Error('no slirp4netns in the kept-alive sandbox group')
				expect(await probe(sandbox, 'tcp', internet.address, String(internet.port))).toBe(
					'reached internet',
				)
				expect(await probe(sandbox, 'tcp', internet.hostSideAddress, String(ports.any))).toBe(
					'ECONNREFUSED',
				)
				await sandbox.destroy()
				await waitFor(() => isGone(slirp.pid))
			} finally {
				await library.remove()
			}
		})

		it('slirp4netns lives inside the sandbox’s cgroup and exits with the sandbox, even unasked', async () => {
			const sandbox = await provider.create({ egress: { kind: 'allow-all' } })
			const processes = await sandboxProcesses(sandbox.id)
			const slirp = processes.find((entry) => entry.comm === 'slirp4netns')
			if (!slirp) throw new Error('no slirp4netns in the sandbox group')
			// Kill the sandbox behind the host's back: slirp4netns sees its --exit-fd close and goes.
			for (const entry of processes.filter((p) => p.comm === 'bwrap')) {
				try {
					process.kill(entry.pid, 'SIGKILL')
				} catch {
					// The outer bwrap goes by itself once the inner one is dead.
				}
			}
			await waitFor(() => isGone(slirp.pid))
			await sandbox.destroy()
		})
	},
)

describe.skipIf(bwrapSkip !== undefined)(
	`allow-all that cannot be set up${bwrapSkip ? ` (skipped: ${bwrapSkip})` : ''}`,
	() => {
		it('is refused at create() by name with what to install, and deny-all still works', async () => {
			const state = await freshStateDir()
			const provider = createLocalSandboxProvider({
				tier: 'process',
				stateDir: state.dir,
				tools: { slirp4netns: '/nonexistent/slirp4netns', nft: '/nonexistent/nft' },
			})
			try {
				const error = await provider
					.create({ egress: { kind: 'allow-all' } })
					.catch((caught: unknown) => caught)
				expect(error).toBeInstanceOf(LocalNetworkUnavailableError)
				expect(error).toMatchObject({ reason: 'network-unavailable' })
				const message = (error as Error).message
				expect(message).toContain('/nonexistent/slirp4netns')
				expect(message).toContain('apt-get install -y slirp4netns')
				expect(message).toContain('apt-get install -y nftables')
				expect(stateDirIds(state.dir)).toEqual([])
				const sandbox = await provider.create()
				expect((await sandbox.exec('true')).exitCode).toBe(0)
				await sandbox.destroy()
				expect(await sandboxEntries(state.dir)).toEqual([])
			} finally {
				await provider.close()
				await state.remove()
			}
		})

		it.each([
			['slirp4netns', { slirp4netns: '/bin/false' }],
			['firewall', { nft: '/bin/false' }],
		] as const)(
			'a %s that fails is named (LocalNetworkSetupError) and leaves nothing behind',
			async (step, tools) => {
				const state = await freshStateDir()
				const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir, tools })
				try {
					const error = await provider
						.create({ egress: { kind: 'allow-all' } })
						.catch((caught: unknown) => caught)
					expect(error).toBeInstanceOf(LocalNetworkSetupError)
					expect(error).toMatchObject({ step, reason: 'network-setup-failed' })
					expect(await sandboxEntries(state.dir)).toEqual([])
					expect(processesMentioning(state.dir)).toEqual([])
				} finally {
					await provider.close()
					await state.remove()
				}
			},
		)

		it('the host is unaffected: no namzu table appears in the host ruleset', () => {
			let ruleset = ''
			try {
				ruleset = execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })
			} catch {
				return
			}
			expect(ruleset).not.toContain('namzu')
		})
	},
)
