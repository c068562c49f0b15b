/**
 * Faults named fast: an agent that dies under a local sandbox — SIGKILLed from the host, OOM-killed,
 * or exiting by itself — fails every call in flight with `GuestDiedError` (exit code, signal,
 * `oomKilled`) well before the 8 s cancel window, every later call refuses with the same error, the
 * status is `destroyed` with `guestExit` set, and `destroy()` still takes everything down. A
 * workload the OOM killer takes while the agent survives is an ordinary result (the control).
 */
import { readFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { LocalSandbox } from '../../../src/backends/local/index.js'
import { SandboxDestroyedError } from '../../../src/contract/errors.js'
import { GuestDiedError } from '../../../src/host/transport/transport-errors.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	cgroupDirsFor,
	processesMentioning,
	sandboxEntries,
	useLocalProvider,
	waitFor,
} from './local-test-support.js'

const skip = bwrapSkipReason()
/** The bound each fault must beat: half the 8 s cancel window (a generous bound, not a speed claim). */
const TIMER_MS = 4000

/** The agent's host pid: the node under bwrap running the bundle, in the sandbox's own groups. */
function agentHostPid(id: string): number {
	const found = processesMentioning('/.namzu/agent.cjs').filter((pid) => {
		try {
			// bwrap's own command lines name the bundle too.
			if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'node') return false
			return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`/namzu-sbx-${id}`)
		} catch {
			return false
		}
	})
	// A spare the agent is starting is a fork of it (still `node`, same command line) until it
	// execs its shell: the agent is the one whose parent is not among them.
	const parentOf = (pid: number) =>
		Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1])
	const agents = found.filter((pid) => {
		try {
			return !found.includes(parentOf(pid))
		} catch {
			return false
		}
	})
	const [pid] = agents
	if (pid === undefined || agents.length !== 1) {
		throw new Error(`expected one agent of ${id}, found ${agents.length} (${found.join(', ')})`)
	}
	return pid
}

/** What settles first: `pending` (its value or its error) or a timer of `TIMER_MS`. */
function raceTimer(pending: Promise<unknown>): Promise<unknown> {
	let timer: NodeJS.Timeout | undefined
	const fired = new Promise((resolve) => {
		timer = setTimeout(() => resolve('timer fired first'), TIMER_MS)
	})
	return Promise.race([
		pending.then(
			(value) => ({ resolved: value }),
			(error: unknown) => error,
		),
		fired,
	]).finally(() => clearTimeout(timer))
}

/** The error a call settled with, asserted to be the death, SIGKILL and not the OOM killer. */
function expectKilled(outcome: unknown, id: string): GuestDiedError {
	expect(outcome).toBeInstanceOf(GuestDiedError)
	const died = outcome as GuestDiedError
	expect(died).toMatchObject({
		name: 'GuestDiedError',
		reason: 'guest-died',
		retryable: false,
		sandboxId: id,
		exitCode: null,
		signal: 'SIGKILL',
		oomKilled: false,
	})
	return died
}

/** After the death: the status says so, later calls fail at once with the same error, destroy works. */
async function expectDeadThenDestroyed(
	sandbox: LocalSandbox,
	died: GuestDiedError,
	stateDir: string,
): Promise<void> {
	expect(sandbox.status).toBe('destroyed')
	expect(sandbox.guestExit).toMatchObject({
		exitCode: died.exitCode,
		signal: died.signal,
		sandboxId: sandbox.id,
	})
	await expect(sandbox.exec('true')).rejects.toBe(died)
	await expect(sandbox.readFile('anything')).rejects.toBe(died)
	expect(() => sandbox.readFileStream('anything')).toThrow(died)
	await sandbox.destroy()
	await expect(sandbox.exec('true')).rejects.toBeInstanceOf(SandboxDestroyedError)
	await waitFor(() => processesMentioning(`namzu-sbx-${sandbox.id}`).length === 0)
	expect(cgroupDirsFor([sandbox.id])).toEqual([])
	expect((await sandboxEntries(stateDir)).filter((entry) => entry.includes(sandbox.id))).toEqual([])
}

/** A connection to the guest's echo service on `port`, once it answers (it may still be starting). */
async function echoingConnection(sandbox: LocalSandbox, port: number) {
	for (let attempt = 0; attempt < 50; attempt++) {
		const connection = await sandbox.openTcpConnection({ port }).catch(() => undefined)
		if (connection === undefined) {
			await new Promise((resolve) => setTimeout(resolve, 100))
			continue
		}
		let echoed = ''
		connection.onData((chunk) => {
			echoed += Buffer.from(chunk).toString()
		})
		connection.write('ping')
		const answered = await waitFor(() => echoed === 'ping', 500).then(
			() => true,
			() => false,
		)
		if (answered) return connection
		connection.destroy()
	}
	throw new Error(`nothing echoes on port ${port} in the sandbox`)
}

describe.skipIf(skip !== undefined)(
	`an agent that dies under a local sandbox is named at once${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()

		it('a long exec fails with GuestDiedError (SIGKILL) before a 4 s timer when the agent is SIGKILLed', async () => {
			const sandbox = await file.provider.create()
			let output = ''
			const running = sandbox.exec('sh', ['-c', 'echo started; exec sleep 60'], {
				onOutput: ({ data }) => {
					output += data
				},
			})
			await waitFor(() => output.includes('started'))
			process.kill(agentHostPid(sandbox.id), 'SIGKILL')
			const died = expectKilled(await raceTimer(running), sandbox.id)
			await expectDeadThenDestroyed(sandbox, died, file.stateDir)
		})

		it('a streaming read fails with GuestDiedError before a 4 s timer', async () => {
			const sandbox = await file.provider.create()
			await sandbox.exec('sh', ['-c', 'head -c 67108864 /dev/zero > big'])
			const iterator = sandbox.readFileStream('big')[Symbol.asyncIterator]()
			const first = await iterator.next()
			expect(first.done).toBe(false)
			process.kill(agentHostPid(sandbox.id), 'SIGKILL')
			const drain = async () => {
				for (;;) if ((await iterator.next()).done) return 'completed'
			}
			const died = expectKilled(await raceTimer(drain()), sandbox.id)
			await expectDeadThenDestroyed(sandbox, died, file.stateDir)
		})

		it("a terminal's exited rejects with GuestDiedError before a 4 s timer", async () => {
			const sandbox = await file.provider.create()
			const terminal = await sandbox.openTerminal({
				command: '/bin/sh',
				size: { cols: 80, rows: 24 },
			})
			let screen = ''
			terminal.onData((chunk) => {
				screen += chunk
			})
			terminal.write('echo ready-$((6*7))\n')
			await waitFor(() => screen.includes('ready-42'))
			process.kill(agentHostPid(sandbox.id), 'SIGKILL')
			const died = expectKilled(await raceTimer(terminal.exited), sandbox.id)
			await expectDeadThenDestroyed(sandbox, died, file.stateDir)
		})

		it("a TCP connection's closed rejects with GuestDiedError before a 4 s timer", async () => {
			const sandbox = await file.provider.create()
			await sandbox.startDetached({
				sessionId: 'echo',
				command: 'node',
				args: ['-e', "require('net').createServer((s) => s.pipe(s)).listen(7007, '127.0.0.1')"],
			})
			const connection = await echoingConnection(sandbox, 7007)
			process.kill(agentHostPid(sandbox.id), 'SIGKILL')
			const died = expectKilled(await raceTimer(connection.closed), sandbox.id)
			await expectDeadThenDestroyed(sandbox, died, file.stateDir)
		})

		it("a session terminal's exited rejects with GuestDiedError, not a detach, before a 4 s timer", async () => {
			const sandbox = await file.provider.create()
			const terminal = await sandbox.openTerminal({
				command: '/bin/sh',
				size: { cols: 80, rows: 24 },
				sessionId: 'term',
				persistent: true,
			})
			let screen = ''
			terminal.onData((chunk) => {
				screen += chunk
			})
			terminal.write('echo ready-$((6*7))\n')
			await waitFor(() => screen.includes('ready-42'))
			process.kill(agentHostPid(sandbox.id), 'SIGKILL')
			const died = expectKilled(await raceTimer(terminal.exited), sandbox.id)
			await expectDeadThenDestroyed(sandbox, died, file.stateDir)
		})

		it('an agent the OOM killer takes (its limit lowered under it from the host) reports oomKilled', async () => {
			const sandbox = await file.provider.create({ memoryLimitMb: 256 })
			const [memory] = cgroupDirsFor([sandbox.id]).filter((dir) => dir.includes('/memory'))
			if (memory === undefined) throw new Error('no memory group')
			const usage = Number(await readFile(join(memory, 'memory.usage_in_bytes'), 'utf8'))
			await writeFile(join(memory, 'memory.limit_in_bytes'), String(usage + 4 * 1024 * 1024))
			// The agent itself must now allocate: a control request is read whole and parsed (a file's
			// bytes would not do: they stream through reused buffers). Three of 15 MiB at once, each
			// under the 16 MiB request frame cap, come to far more than the 4 MiB of room.
			const argument = 'x'.repeat(15 * 1024 * 1024)
			const runs = [1, 2, 3].map(() => sandbox.exec('true', [argument]))
			for (const run of runs) run.catch(() => {})
			const outcome = await raceTimer(runs[0] ?? Promise.resolve())
			expect(outcome).toBeInstanceOf(GuestDiedError)
			expect(outcome).toMatchObject({
				sandboxId: sandbox.id,
				exitCode: null,
				signal: 'SIGKILL',
				oomKilled: true,
			})
			expect((outcome as Error).message).toMatch(/OOM killer/)
			expect(sandbox.guestExit).toMatchObject({ oomKilled: true, signal: 'SIGKILL' })
			await expectDeadThenDestroyed(sandbox, outcome as GuestDiedError, file.stateDir)
		})

		it('a workload the OOM killer takes is an ordinary result: the agent lives and serves on', async () => {
			const sandbox = await file.provider.create({ memoryLimitMb: 64 })
			try {
				const result = await sandbox.exec('node', [
					'-e',
					'const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))',
				])
				expect(result.signal ?? String(result.exitCode)).toMatch(/SIGKILL|137/)
				expect(sandbox.status).toBe('ready')
				expect(sandbox.guestExit).toBeUndefined()
				expect((await sandbox.exec('echo', ['still here'])).stdout).toBe('still here\n')
			} finally {
				await sandbox.destroy()
			}
		})

		it('an agent that exits by itself (SIGTERM drains, exit 0) is named with its exit code', async () => {
			const sandbox = await file.provider.create()
			process.kill(agentHostPid(sandbox.id), 'SIGTERM')
			await waitFor(() => sandbox.status === 'destroyed')
			const outcome = await sandbox.exec('true').catch((error: unknown) => error)
			expect(outcome).toBeInstanceOf(GuestDiedError)
			expect(outcome).toMatchObject({ exitCode: 0, signal: null, oomKilled: false })
			expect((outcome as Error).message).toMatch(/exited with code 0/)
			await expectDeadThenDestroyed(sandbox, outcome as GuestDiedError, file.stateDir)
		})

		it('a destroy() is not a death: later calls are SandboxDestroyedError and guestExit stays unset', async () => {
			const sandbox = await file.provider.create()
			await sandbox.destroy()
			expect(sandbox.status).toBe('destroyed')
			expect(sandbox.guestExit).toBeUndefined()
			await expect(sandbox.exec('true')).rejects.toBeInstanceOf(SandboxDestroyedError)
		})
	},
)
