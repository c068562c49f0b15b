/**
 * Shared bits of the agent-core tests: running the bundled agent to a startup refusal, raw socket
 * exchanges that need more control than `rawRequest`, and readers for `execute` streams.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { agentBundlePath } from '../../src/host/sandbox/agent-bundle-path.js'
import { encodeFrame, parseFramePayload } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'
import type { AgentAddress, RawExchange } from '../helpers/raw-agent-client.js'
import { connectAgent, rawRequest } from '../helpers/raw-agent-client.js'

export interface AgentExit {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

/** Runs dist/agent.cjs with exactly `env` (plus PATH) and waits for it to exit on its own. */
export function runAgentToExit(
	env: Record<string, string>,
	timeoutMs = 10_000,
): Promise<AgentExit> {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, [agentBundlePath()], {
			env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		const timer = setTimeout(() => {
			child.kill('SIGKILL')
			reject(new Error(`agent did not exit within ${timeoutMs} ms; stdout: ${stdout}`))
		}, timeoutMs)
		child.once('close', (code) => {
			clearTimeout(timer)
			resolve({ code, stdout, stderr })
		})
	})
}

/** Resolves with the exit code (or signal) once `child` exits. */
export function exitOf(
	child: ChildProcess,
): Promise<{ code: number | null; signal: string | null }> {
	if (child.exitCode !== null || child.signalCode !== null) {
		return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
	}
	return new Promise((resolve) => {
		child.once('exit', (code, signal) => resolve({ code, signal }))
	})
}

export function frame(message: object): Buffer {
	return encodeFrame(message)
}

/** The concatenated text of every `<stream>_delta` event. */
export function streamText(exchange: RawExchange, stream: 'stdout' | 'stderr'): string {
	return exchange.frames
		.filter((event) => event.type === `${stream}_delta`)
		.map((event) => String(event.data))
		.join('')
}

/** The last frame of an exchange (an `execute`'s result or error). */
export function lastFrame(exchange: RawExchange): Record<string, unknown> | undefined {
	return exchange.frames.at(-1)
}

/**
 * A connection kept open by the test: frames arrive in `frames`, `waitFor` resolves when a frame
 * matching the predicate has arrived, `closed` when the agent closed or reset it.
 */
export interface OpenConnection {
	readonly socket: Socket
	readonly frames: Record<string, unknown>[]
	waitFor(predicate: (frame: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>
	readonly closed: Promise<'end' | 'error'>
}

export function openConnection(
	address: AgentAddress,
	envelope?: object | Buffer,
	options: { allowHalfOpen?: boolean } = {},
): OpenConnection {
	const socket = address.socketPath
		? connect({ path: address.socketPath, allowHalfOpen: options.allowHalfOpen ?? false })
		: connect({
				host: '127.0.0.1',
				port: address.port ?? 0,
				allowHalfOpen: options.allowHalfOpen ?? false,
			})
	const reader = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, limitVariable: 'test' })
	const frames: Record<string, unknown>[] = []
	const waiters: Array<() => void> = []
	socket.on('data', (chunk: Buffer) => {
		for (const item of reader.push(chunk)) {
			if (item.kind === 'frame') frames.push(parseFramePayload(item.payload))
		}
		for (const waiter of waiters.slice()) waiter()
	})
	const closed = new Promise<'end' | 'error'>((resolve) => {
		socket.once('error', () => resolve('error'))
		socket.once('close', () => resolve('end'))
	})
	if (envelope) socket.write(Buffer.isBuffer(envelope) ? envelope : encodeFrame(envelope))
	return {
		socket,
		frames,
		closed,
		waitFor(predicate) {
			return new Promise((resolve, reject) => {
				const check = () => {
					const found = frames.find(predicate)
					if (!found) return
					waiters.splice(waiters.indexOf(check), 1)
					resolve(found)
				}
				waiters.push(check)
				check()
				closed.then(() => {
					const found = frames.find(predicate)
					if (found) resolve(found)
					else reject(new Error(`connection closed; frames: ${JSON.stringify(frames)}`))
				})
			})
		},
	}
}

/**
 * Proves the agent destroyed (not merely ended) the connection: keeps writing after the refusal
 * and expects the write side to fail (EPIPE/ECONNRESET) or the socket to close.
 */
export async function writesAreRejected(connection: OpenConnection): Promise<boolean> {
	const { socket } = connection
	const junk = Buffer.alloc(64 * 1024, 0x30)
	const deadline = Date.now() + 5_000
	let settled = false
	void connection.closed.then(() => {
		settled = true
	})
	while (!settled && Date.now() < deadline) {
		if (socket.destroyed) return true
		socket.write(junk, () => {})
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
	return settled || socket.destroyed
}

/** Whether `pid` is gone or only a zombie. */
export function isDeadOrZombie(pid: number): boolean {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
		const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
		return state === 'Z' || state === 'X'
	} catch {
		return true
	}
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms))
}

export { connectAgent, rawRequest }
