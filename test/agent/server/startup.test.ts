import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	exitOf,
	isDeadOrZombie,
	openConnection,
	rawRequest,
	runAgentToExit,
} from '../agent-test-kit.js'

const LISTEN_VARIABLES = ['NAMZU_AGENT_UNIX_PATH', 'NAMZU_AGENT_VSOCK_PORT', 'NAMZU_AGENT_TCP_PORT']

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup()
})

async function tempDir(): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-agent-core-'))
	cleanups.push(() => rm(dir, { recursive: true, force: true }))
	return dir
}

async function started(options: Parameters<typeof startAgent>[0]): Promise<StartedAgent> {
	const agent = await startAgent(options)
	cleanups.push(() => agent.stop())
	return agent
}

describe('agent startup', () => {
	it('refuses to start with no listen mode configured, naming all three variables', async () => {
		const exit = await runAgentToExit({})
		expect(exit.code).toBe(1)
		for (const name of LISTEN_VARIABLES) expect(exit.stderr).toContain(name)
		expect(exit.stdout).not.toContain('listening')
		expect(exit.stderr.trim().split('\n')).toHaveLength(1)
	})

	it('refuses a TCP listener without a token variable, naming both and binding nothing', async () => {
		const exit = await runAgentToExit({ NAMZU_AGENT_TCP_PORT: '0' })
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('NAMZU_AGENT_BIND_TOKEN')
		expect(exit.stderr).toContain('NAMZU_AGENT_REQUIRE_TOKEN')
		expect(exit.stdout).not.toContain('listening')
	})

	it.each([
		['unix', { NAMZU_AGENT_UNIX_PATH: '/tmp/namzu-never-bound.sock' }],
		['vsock', { NAMZU_AGENT_VSOCK_PORT: '1024' }],
		['tcp', { NAMZU_AGENT_TCP_PORT: '0' }],
	])('refuses an empty NAMZU_AGENT_BIND_TOKEN in %s mode', async (_mode, listen) => {
		const exit = await runAgentToExit({ ...listen, NAMZU_AGENT_BIND_TOKEN: '' })
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('NAMZU_AGENT_BIND_TOKEN')
		expect(exit.stdout).not.toContain('listening')
		expect(existsSync('/tmp/namzu-never-bound.sock')).toBe(false)
	})

	it('refuses a malformed integer setting by name before binding', async () => {
		const dir = await tempDir()
		const exit = await runAgentToExit({
			NAMZU_AGENT_UNIX_PATH: join(dir, 'agent.sock'),
			NAMZU_AGENT_MAX_FRAME_BYTES: 'lots',
		})
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('NAMZU_AGENT_MAX_FRAME_BYTES')
		expect(existsSync(join(dir, 'agent.sock'))).toBe(false)
	})

	it('tries a failed first bind of its unix path again: once the path is free, it listens and answers', async () => {
		const { mkdir, rmdir } = await import('node:fs/promises')
		let squat = ''
		let freed: Promise<void> = Promise.resolve()
		const agent = await started({
			// Something that is not a socket holds the path: the first bind fails and is not fatal.
			beforeStart: async (dir) => {
				squat = join(dir, 'agent.sock')
				await mkdir(squat)
			},
			onStarting: (stderr) => {
				freed = (async () => {
					const deadline = Date.now() + 30_000
					while (!/listen failed \(2\)/.test(stderr())) {
						if (Date.now() > deadline) throw new Error(`no second bind failure: ${stderr()}`)
						await new Promise((resolve) => setTimeout(resolve, 20))
					}
					await rmdir(squat)
				})()
			},
		})
		await freed
		expect(agent.stderr()).toMatch(/listen failed \(1\): .*; trying again/)
		expect((await rawRequest(agent, { op: 'healthz' })).frames[0]).toMatchObject({ ok: true })
	})

	it('prefers the unix socket when both a unix path and a TCP port are configured', async () => {
		const agent = await started({ env: { NAMZU_AGENT_TCP_PORT: '0' } })
		expect(agent.port).toBeUndefined()
		expect(lstatSync(agent.socketPath ?? '').isSocket()).toBe(true)
	})

	it('binds an ephemeral TCP port for NAMZU_AGENT_TCP_PORT=0 and announces it', async () => {
		const agent = await started({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: 'tok-startup' } })
		expect(agent.port).toBeGreaterThan(0)
		const health = await rawRequest(agent, { op: 'healthz' })
		expect(health.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
	})

	it('listens on 0.0.0.0 (every interface) in TCP mode', async () => {
		const agent = await started({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: 'tok-any-iface' } })
		const table = await readFile(`/proc/${agent.process.pid}/net/tcp`, 'utf8')
		const port = (agent.port ?? 0).toString(16).toUpperCase().padStart(4, '0')
		const listening = table
			.split('\n')
			.map((line) => line.trim().split(/\s+/))
			.filter((fields) => fields[1]?.endsWith(`:${port}`) && fields[3] === '0A')
			.map((fields) => fields[1])
		expect(listening).toEqual([`00000000:${port}`])
	})

	it('removes a stale unix socket file left by a dead agent before binding', async () => {
		const dir = await tempDir()
		const path = join(dir, 'stale.sock')
		// A process that binds and dies leaves the socket file behind.
		const python = spawnSync('python3', [
			'-c',
			'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])',
			path,
		])
		expect(python.status).toBe(0)
		expect(lstatSync(path).isSocket()).toBe(true)
		await started({ env: { NAMZU_AGENT_UNIX_PATH: path } })
		const health = await rawRequest({ socketPath: path }, { op: 'healthz' })
		expect(health.frames[0]).toMatchObject({ ok: true })
	})

	it('serves on an inherited listening descriptor 3 when NAMZU_AGENT_VSOCK_PORT is set', async () => {
		const dir = await tempDir()
		const path = join(dir, 'bridge.sock')
		// Stand-in for the vsock bridge: bind a listening socket as fd 3, then exec the agent.
		const script = [
			'import os, socket, sys',
			's = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16)',
			'os.dup2(s.fileno(), 3); os.set_inheritable(3, True)',
			'os.execv(sys.argv[2], [sys.argv[2], sys.argv[3]])',
		].join('\n')
		const child = spawn('python3', ['-c', script, path, process.execPath, agentBundlePath()], {
			env: {
				PATH: process.env.PATH ?? '/usr/bin:/bin',
				NAMZU_AGENT_VSOCK_PORT: '1024',
				NAMZU_SANDBOX_WORKSPACE: dir,
			},
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		cleanups.push(async () => {
			if (child.exitCode === null && child.signalCode === null) {
				child.kill('SIGKILL')
				await exitOf(child)
			}
		})
		const line = await new Promise<string>((resolve, reject) => {
			let out = ''
			child.stdout.on('data', (chunk: Buffer) => {
				out += chunk.toString()
				if (out.includes('\n')) resolve(out.trim())
			})
			child.once('exit', (code) => reject(new Error(`exited ${code}`)))
		})
		expect(line).toBe('listening {"kind":"vsock","port":1024}')
		const health = await rawRequest({ socketPath: path }, { op: 'healthz' })
		expect(health.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
		// The SIGTERM handler is on in this mode too (python exec'd into the agent: same pid).
		child.kill('SIGTERM')
		expect(await exitOf(child)).toEqual({ code: 0, signal: null })
	})

	it('refuses vsock mode with a clear message when descriptor 3 is not a socket', async () => {
		const exit = await runAgentToExit({ NAMZU_AGENT_VSOCK_PORT: '1024' })
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('descriptor 3')
		expect(exit.stderr).toContain('NAMZU_AGENT_VSOCK_PORT')
	})
})

describe('agent SIGTERM', () => {
	it('exits 0 on SIGTERM while idle', async () => {
		const agent = await started({})
		agent.process.kill('SIGTERM')
		expect(await exitOf(agent.process)).toEqual({ code: 0, signal: null })
	})

	it('exits 0 on SIGTERM while idle in TCP mode as well', async () => {
		const agent = await started({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: 'tcp-token' } })
		agent.process.kill('SIGTERM')
		expect(await exitOf(agent.process)).toEqual({ code: 0, signal: null })
	})

	it('exits 0 on SIGTERM mid-execute, after the drain stopped the running group', async () => {
		const agent = await started({})
		const run = openConnection(agent, {
			op: 'execute',
			body: { command: 'sh', args: ['-c', 'sleep 30 & echo $!; sleep 30'] },
		})
		const first = await run.waitFor((frame) => frame.type === 'stdout_delta')
		const backgroundPid = Number(String(first.data).trim())
		expect(backgroundPid).toBeGreaterThan(0)
		agent.process.kill('SIGTERM')
		expect(await exitOf(agent.process)).toEqual({ code: 0, signal: null })
		// Release 15 drains (984d966): the group is stopped by the quiesce routine before exit 0, so
		// the caller may or may not see its result frame first; either way the connection ends.
		await run.closed
		await expect.poll(() => isDeadOrZombie(backgroundPid)).toBe(true)
	})

	it('exits 0 on SIGTERM when it is pid 1 of its own pid namespace', async () => {
		const pid1 = await startAsPid1()
		if (pid1 === undefined) return // no pid namespaces here; nothing to prove
		process.kill(pid1.agentPid, 'SIGTERM')
		expect(await exitOf(pid1.unshare)).toEqual({ code: 0, signal: null })
	})

	it('exits 0 on SIGTERM as pid 1 while an exec runs and a terminal is open; both callers see the connection drop', async () => {
		const pid1 = await startAsPid1()
		if (pid1 === undefined) return
		const address = { socketPath: pid1.socketPath }
		const run = openConnection(address, {
			op: 'execute',
			body: { command: 'sh', args: ['-c', 'echo started; sleep 60'] },
		})
		await run.waitFor((frame) => frame.type === 'stdout_delta')
		const terminal = openConnection(address, {
			op: 'terminal',
			body: { cols: 80, rows: 24 },
		})
		await terminal.waitFor((frame) => frame.type === 'ready')
		// An agent that ignored the signal would hold both open until the test's own timeout.
		process.kill(pid1.agentPid, 'SIGTERM')
		expect(await exitOf(pid1.unshare)).toEqual({ code: 0, signal: null })
		expect(await run.closed).toBeDefined()
		expect(await terminal.closed).toBeDefined()
		expect(run.socket.destroyed).toBe(true)
		expect(terminal.socket.destroyed).toBe(true)
	})
})

interface Pid1Agent {
	readonly unshare: ChildProcess
	readonly agentPid: number
	readonly socketPath: string
}

/**
 * The real agent bundle as pid 1 of a fresh pid namespace with its own /proc, as in a pod (the
 * terminal finds its PTY through /proc); undefined where there is none.
 */
async function startAsPid1(): Promise<Pid1Agent | undefined> {
	const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'])
	if (probe.status !== 0) return undefined
	const dir = await tempDir()
	const socketPath = join(dir, 'pid1.sock')
	const unshare = spawn(
		'unshare',
		['--pid', '--fork', '--mount-proc', process.execPath, agentBundlePath()],
		{
			env: {
				PATH: process.env.PATH ?? '/usr/bin:/bin',
				NAMZU_AGENT_UNIX_PATH: socketPath,
				NAMZU_SANDBOX_WORKSPACE: dir,
			},
			stdio: ['ignore', 'pipe', 'pipe'],
		},
	)
	cleanups.push(async () => {
		if (unshare.exitCode === null && unshare.signalCode === null) {
			unshare.kill('SIGKILL')
			await exitOf(unshare)
		}
	})
	await new Promise<void>((resolve, reject) => {
		unshare.stdout.on('data', (chunk: Buffer) => {
			if (chunk.toString().includes('listening')) resolve()
		})
		unshare.once('exit', (code) => reject(new Error(`exited ${code}`)))
	})
	// The agent is unshare's only child; inside its namespace it is pid 1.
	const agentPid = Number(
		readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'latin1').trim(),
	)
	const nsPid = readFileSync(`/proc/${agentPid}/status`, 'latin1').match(/^NSpid:\s+(.*)$/m)?.[1]
	expect(nsPid?.trim().split(/\s+/).at(-1)).toBe('1')
	return { unshare, agentPid, socketPath }
}
