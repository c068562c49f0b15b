/**
 * A QMP client for one QEMU: the monitor is a unix socket in the guest's private directory (mode
 * 0700, so only this host user reaches it; never a TCP port). Line-delimited JSON: the greeting,
 * `qmp_capabilities`, then one command at a time, each answered `return` or `error` (events in
 * between are skipped). Used for the pause / migrate / continue of a memory checkpoint.
 */
import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { QemuMonitorError } from './microvm-errors.js'

/** A line longer than this is not QMP's (its replies here are small). */
const MAX_LINE_CHARS = 1 << 20
const CONNECT_RETRY_MS = 50

interface Pending {
	readonly command: string
	resolve(value: unknown): void
	reject(error: Error): void
}

export class QemuMonitor {
	readonly #socket: Socket
	#buffer = ''
	#pending: Pending | undefined
	#closed: Error | undefined
	#queue: Promise<unknown> = Promise.resolve()

	private constructor(socket: Socket) {
		this.#socket = socket
		socket.setEncoding('utf8')
		socket.on('data', (chunk: string) => this.#receive(chunk))
		socket.on('error', (error) => this.#fail(error))
		socket.on('close', () => this.#fail(new Error('the monitor socket closed')))
	}

	/** Connects (retrying while QEMU has not created the socket yet) and negotiates capabilities. */
	static async connect(path: string, signal: AbortSignal): Promise<QemuMonitor> {
		for (;;) {
			signal.throwIfAborted()
			const socket = await new Promise<Socket | undefined>((resolve) => {
				const candidate = connect(path)
				candidate.once('connect', () => resolve(candidate))
				candidate.once('error', () => resolve(undefined))
			})
			if (socket !== undefined) {
				const monitor = new QemuMonitor(socket)
				// The greeting arrives first; it is answered like a command with no id.
				await monitor.#expect('greeting')
				await monitor.execute('qmp_capabilities', undefined, signal)
				return monitor
			}
			await sleep(CONNECT_RETRY_MS, undefined, { signal })
		}
	}

	/** Runs one command (after any before it) and answers its `return`. */
	execute(command: string, args?: Readonly<Record<string, unknown>>, signal?: AbortSignal) {
		const run = this.#queue.then(async () => {
			signal?.throwIfAborted()
			const reply = this.#expect(command)
			this.#socket.write(
				`${JSON.stringify({ execute: command, ...(args ? { arguments: args } : {}) })}\n`,
			)
			return reply
		})
		this.#queue = run.catch(() => undefined)
		return run
	}

	close(): void {
		this.#socket.destroy()
	}

	#expect(command: string): Promise<unknown> {
		if (this.#closed) {
			return Promise.reject(new QemuMonitorError(command, this.#closed.message))
		}
		return new Promise((resolve, reject) => {
			this.#pending = { command, resolve, reject }
		})
	}

	#receive(chunk: string): void {
		this.#buffer += chunk
		if (this.#buffer.length > MAX_LINE_CHARS) {
			this.#fail(new Error('an over-long monitor line'))
			this.#socket.destroy()
			return
		}
		for (;;) {
			const end = this.#buffer.indexOf('\n')
			if (end < 0) return
			const line = this.#buffer.slice(0, end).trim()
			this.#buffer = this.#buffer.slice(end + 1)
			if (line !== '') this.#dispatch(line)
		}
	}

	#dispatch(line: string): void {
		let message: Record<string, unknown>
		try {
			message = JSON.parse(line) as Record<string, unknown>
		} catch {
			return
		}
		const pending = this.#pending
		if (pending === undefined || 'event' in message) return
		this.#pending = undefined
		if ('error' in message) {
			const error = message.error as { readonly desc?: unknown } | undefined
			pending.reject(new QemuMonitorError(pending.command, String(error?.desc ?? 'error')))
			return
		}
		pending.resolve('QMP' in message ? message.QMP : message.return)
	}

	#fail(error: Error): void {
		this.#closed ??= error
		const pending = this.#pending
		this.#pending = undefined
		pending?.reject(new QemuMonitorError(pending.command, error.message, { cause: error }))
	}
}

/** A machine's one monitor connection, made on first use; a failed connect is retried next time. */
export interface OnDemandMonitor {
	readonly path: string
	get(): Promise<QemuMonitor>
	close(): Promise<void>
}

export function monitorOnDemand(path: string, connectTimeoutMs: number): OnDemandMonitor {
	let monitor: Promise<QemuMonitor> | undefined
	return {
		path,
		get: () => {
			if (monitor === undefined) {
				const connecting = QemuMonitor.connect(path, AbortSignal.timeout(connectTimeoutMs))
				monitor = connecting
				connecting.catch(() => {
					if (monitor === connecting) monitor = undefined
				})
			}
			return monitor
		},
		close: async () => {
			await monitor?.then((connected) => connected.close()).catch(() => undefined)
		},
	}
}
