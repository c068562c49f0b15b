/**
 * Serves one accepted connection: exactly one request per connection.
 *
 * The first frame is the envelope `{ op, body?, token? }`. Before it is dispatched the frame ceiling
 * is the pre-auth one in a token mode (`NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES`), the full one
 * otherwise; a connection that authenticates is switched to `NAMZU_AGENT_MAX_FRAME_BYTES`. Framing
 * errors and a failed token check are refusals (frame, then destroy — see socket-refusal.ts);
 * unparsable JSON or a non-object envelope is destroyed without an answer. Everything after the
 * envelope goes to the handler's `onFrame` listeners (queued, with reading paused, until the first
 * listener arrives). A handler's error is answered in its op's shape and never escapes: a connection
 * can fail, the agent cannot.
 */

import type { Socket } from 'node:net'
import { isRecord } from '../../common/is-record.js'
import type { SocketBytes } from '../../common/socket-bytes.js'
import {
	asksForBinaryFrames,
	binaryEvent,
	encodeBinaryFrameHeader,
} from '../../wire/binary-frame.js'
import { encodeFrame, FrameError, parseFramePayload, STREAM_TERMINATOR } from '../../wire/frame.js'
import { type FrameItem, FrameReader } from '../../wire/frame-reader.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { ExecutionRegistry } from '../executions/execution-registry.js'
import type { AgentConfig } from '../handler/config.js'
import type { ChannelRelease, OpContext } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { type AgentGates, gateRefusal } from '../lifecycle/agent-gates.js'
import { OPS, type OpEntry } from '../ops/registry.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import type { StartedAhead } from '../process/workload-spawn.js'
import { acceptedSocketBytes } from './accepted-reads.js'
import type { PreauthMember, PreauthPool } from './preauth-pool.js'
import { refuseAndDestroy } from './socket-refusal.js'
import type { TokenGate } from './token-gate.js'

export interface ConnectionServices {
	readonly config: AgentConfig
	readonly gate: TokenGate
	readonly executions: ExecutionRegistry
	/** Retiring / quiescing admission gates, shared by every connection of the process. */
	readonly gates: AgentGates
	/** The tier's workload cgroups (absent ⇒ commands run in their process group only). */
	readonly workloadCgroups?: WorkloadCgroups
	/** Commands started ahead in their groups (`spare-command.ts`); absent ⇒ every one is spawned. */
	readonly startedAhead?: StartedAhead
	/** Token modes: the shared bounds on unauthenticated connections (absent ⇒ unbounded). */
	readonly preauth?: PreauthPool
	/** The agent's listener (`release-listener`); absent where a test serves its own. */
	readonly channel?: ChannelRelease
	/** Op table; the registry's `OPS` unless a test supplies its own. */
	readonly ops?: Readonly<Record<string, OpEntry>>
	/** Where unexpected handler errors are reported (never a token). */
	readonly log?: (line: string) => void
}

const FULL_LIMIT_VARIABLE = 'NAMZU_AGENT_MAX_FRAME_BYTES'
const PREAUTH_LIMIT_VARIABLE = 'NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES'
const EMPTY = Buffer.alloc(0)
/** An unknown op name is echoed back; cap it so the refusal stays small. */
const MAX_ECHOED_OP_CHARS = 128

function describeOp(op: unknown): string {
	const text = typeof op === 'string' ? op : String(JSON.stringify(op))
	return text.length > MAX_ECHOED_OP_CHARS ? `${text.slice(0, MAX_ECHOED_OP_CHARS)}…` : text
}

function lookupOp(ops: Readonly<Record<string, OpEntry>>, op: unknown): OpEntry | undefined {
	return typeof op === 'string' && Object.hasOwn(ops, op) ? ops[op] : undefined
}

/** Serves the socket through its lifetime; a class so each step below reads one shared state. */
export function handleConnection(socket: Socket, services: ConnectionServices): void {
	new ServedConnection(socket, services).listen()
}

/** The connection's state, and the steps that read and change it. */
class ServedConnection {
	readonly #socket: Socket
	readonly #services: ConnectionServices
	readonly #ops: Readonly<Record<string, OpEntry>>
	readonly #log: (line: string) => void
	readonly #reader: FrameReader
	readonly #bytes: SocketBytes
	/** Only token modes bound unauthenticated peers; the member leaves the pool on authentication. */
	readonly #preauth: PreauthMember | undefined
	readonly #ctx: OpContext
	#phase: 'envelope' | 'dispatched' | 'refused' = 'envelope'
	#binaryFrames = false
	#closed = false
	#answered = false
	/** Token modes: leaves the gate's list of authenticated connections. */
	#untrack: (() => void) | undefined
	readonly #frameListeners: Array<(message: Record<string, unknown>) => void> = []
	readonly #pendingFrames: Record<string, unknown>[] = []
	readonly #closeListeners: Array<() => void> = []

	constructor(socket: Socket, services: ConnectionServices) {
		const { config, gate } = services
		this.#socket = socket
		this.#services = services
		this.#ops = services.ops ?? OPS
		this.#log = services.log ?? (() => {})
		this.#reader = gate.enabled
			? new FrameReader({
					maxFrameBytes: config.maxPreauthFrameBytes,
					limitVariable: PREAUTH_LIMIT_VARIABLE,
				})
			: new FrameReader({ maxFrameBytes: config.maxFrameBytes, limitVariable: FULL_LIMIT_VARIABLE })
		this.#preauth = gate.enabled
			? services.preauth?.admit((error) => this.#refuse(error))
			: undefined
		this.#bytes = acceptedSocketBytes(socket)
		this.#ctx = this.#opContext()
	}

	listen(): void {
		const socket = this.#socket
		this.#bytes.attach((chunk) => this.#onData(chunk), {
			// A large binary payload is read straight into its frame buffer (the reader's target).
			target: () => (this.#isRefused() || this.#closed ? undefined : this.#reader.readTarget()),
			filled: (target, byteCount) => this.#onRead(target, byteCount),
		})
		socket.on('error', () => {
			// Resets and EPIPEs from vanished peers are routine; 'close' follows and cleans up.
		})
		socket.once('close', () => this.#onClose())
	}

	// A method, so control-flow narrowing does not assume `phase` survives a dispatch unchanged.
	#isRefused(): boolean {
		return this.#phase === 'refused'
	}

	#refuse(error: string): void {
		if (this.#phase === 'refused') return
		this.#phase = 'refused'
		this.#preauth?.release()
		refuseAndDestroy(this.#socket, { ok: false, error }, this.#services.config.refusalFlushGraceMs)
	}

	#deliver(message: Record<string, unknown>): void {
		for (const listener of this.#frameListeners) {
			try {
				listener(message)
			} catch (error) {
				this.#log(
					`frame listener failed: ${error instanceof Error ? error.message : String(error)}`,
				)
				this.#socket.destroy()
				return
			}
		}
	}

	/** What a handler sees: answer, events, frames in both directions, close. */
	#opContext(): OpContext {
		const self = this
		const socket = this.#socket
		const { config, executions, gates, workloadCgroups, startedAhead, gate, channel } =
			this.#services
		const over = () => this.#answered || this.#closed
		return {
			config,
			socket,
			executions,
			gates,
			workloadCgroups,
			startedAhead,
			tokenGate: gate,
			channel,
			reply(message) {
				if (over()) return
				self.#answered = true
				socket.end(encodeFrame(message))
			},
			send(event) {
				// After close (or the end of the answer) events are dropped; there is no drain to wait for.
				if (over()) return true
				return socket.write(encodeFrame(event))
			},
			sendFrame(frame, onFlushed) {
				if (over()) {
					onFlushed?.()
					return true
				}
				return onFlushed ? socket.write(frame, () => onFlushed()) : socket.write(frame)
			},
			get binaryFrames() {
				return self.#binaryFrames
			},
			sendBinary(channel, bytes, onFlushed) {
				if (!self.#binaryFrames) throw new Error('sendBinary on a connection without binary frames')
				if (over()) {
					onFlushed?.()
					return true
				}
				// Corked, so header and bytes leave in one writev without copying the bytes.
				socket.cork()
				socket.write(encodeBinaryFrameHeader(channel, bytes.byteLength))
				const flowing = onFlushed ? socket.write(bytes, () => onFlushed()) : socket.write(bytes)
				socket.uncork()
				return flowing
			},
			endStream() {
				if (over()) return
				self.#answered = true
				socket.end(STREAM_TERMINATOR)
			},
			onFrame(listener) {
				self.#subscribe(listener)
			},
			onClose(listener) {
				if (self.#closed) queueMicrotask(listener)
				else self.#closeListeners.push(listener)
			},
			onBytes(listener) {
				return self.#bytes.onBytes(listener)
			},
			get closed() {
				return self.#closed
			},
		}
	}

	#subscribe(listener: (message: Record<string, unknown>) => void): void {
		this.#frameListeners.push(listener)
		if (this.#frameListeners.length === 1 && this.#pendingFrames.length > 0) {
			for (const message of this.#pendingFrames.splice(0)) this.#deliver(message)
			if (!this.#closed) this.#socket.resume()
		}
	}

	#answerError(entry: OpEntry, error: unknown): void {
		const refusal = error instanceof OpRefusal ? error : undefined
		const text = refusal ? refusal.error : error instanceof Error ? error.message : String(error)
		if (!refusal) this.#log(`handler failed: ${text}`)
		if (this.#closed || this.#answered) return
		if (entry.stream) {
			this.#ctx.send({ type: 'error', error: text })
			this.#ctx.endStream()
		} else {
			this.#ctx.reply({
				ok: false,
				error: text,
				...(refusal?.detail === undefined ? {} : { message: refusal.detail }),
			})
		}
	}

	#dispatch(envelope: Record<string, unknown>): void {
		const { config, gate, gates } = this.#services
		const entry = lookupOp(this.#ops, envelope.op)
		if (!entry?.public && gate.enabled) {
			if (!gate.authenticate(envelope.token)) {
				this.#refuse(AGENT_REFUSAL.unauthorized)
				return
			}
			this.#reader.setLimit(config.maxFrameBytes, FULL_LIMIT_VARIABLE)
			this.#preauth?.release()
			this.#untrack = gate.track(this.#socket, () => this.#socket.destroy())
		}
		if (!entry) {
			this.#ctx.reply({
				ok: false,
				error: formatRefusal(AGENT_REFUSAL.unknown_op, describeOp(envelope.op)),
			})
			return
		}
		const closedGate = gateRefusal(gates, String(envelope.op))
		if (closedGate !== undefined) {
			this.#answerError(entry, new OpRefusal(closedGate))
			return
		}
		const body = isRecord(envelope.body) ? envelope.body : {}
		if (entry.binaryFrames && config.binaryFrames && asksForBinaryFrames(body)) {
			this.#binaryFrames = true
			this.#reader.allowBinary()
		}
		try {
			const pending = entry.handler(body, this.#ctx)
			if (pending instanceof Promise) {
				pending.catch((error: unknown) => this.#answerError(entry, error))
			}
		} catch (error) {
			this.#answerError(entry, error)
		}
	}

	#consume(item: FrameItem): boolean {
		if (item.kind === 'end') {
			// A terminator where an envelope belongs is a broken peer; after it, nothing to do.
			if (this.#phase !== 'envelope') return true
			this.#socket.destroy()
			return false
		}
		let message: Record<string, unknown>
		if (item.kind === 'binary') {
			// The reader refuses binary headers until the envelope negotiated them.
			message = { ...binaryEvent(item.channel, item.payload, item.release) }
		} else {
			try {
				message = parseFramePayload(item.payload)
			} catch {
				this.#socket.destroy()
				return false
			}
		}
		if (this.#phase === 'envelope') {
			this.#phase = 'dispatched'
			this.#dispatch(message)
		} else if (this.#frameListeners.length > 0) {
			this.#deliver(message)
		} else {
			// Hold early frames for a handler that subscribes late, and stop reading meanwhile.
			this.#pendingFrames.push(message)
			this.#socket.pause()
		}
		return true
	}

	#onData(chunk: Buffer): void {
		// The envelope alone first: it decides whether the frames behind it may be binary.
		this.#take(chunk.length, (reader) =>
			reader.push(chunk, this.#phase === 'envelope' ? 1 : undefined),
		)
	}

	/** Bytes the socket read straight into the reader's `readTarget()` (never an envelope's). */
	#onRead(target: Buffer, byteCount: number): void {
		this.#take(byteCount, (reader) => reader.pushRead(target, byteCount))
	}

	/** Accounts `byteCount` read bytes, then consumes the items `read` completes. */
	#take(byteCount: number, read: (reader: FrameReader) => FrameItem[]): void {
		if (this.#isRefused()) return
		const overBudget = this.#preauth?.receive(byteCount)
		if (overBudget !== undefined) {
			this.#refuse(overBudget)
			return
		}
		const reader = this.#reader
		try {
			let items = read(reader)
			this.#preauth?.settle(reader.bufferedBytes)
			while (items.length > 0) {
				const wasEnvelope = this.#phase === 'envelope'
				for (const item of items) {
					if (this.#isRefused() || this.#socket.destroyed || !this.#consume(item)) return
				}
				items = wasEnvelope && reader.bufferedBytes > 0 ? reader.push(EMPTY) : []
			}
		} catch (error) {
			if (error instanceof FrameError) {
				this.#refuse(error.message)
				return
			}
			this.#log(`connection failed: ${error instanceof Error ? error.message : String(error)}`)
			this.#socket.destroy()
		}
	}

	#onClose(): void {
		this.#closed = true
		this.#preauth?.release()
		this.#untrack?.()
		for (const listener of this.#closeListeners.splice(0)) {
			try {
				listener()
			} catch (error) {
				this.#log(
					`close listener failed: ${error instanceof Error ? error.message : String(error)}`,
				)
			}
		}
	}
}
