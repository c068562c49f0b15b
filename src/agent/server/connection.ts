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
import {
	asksForBinaryFrames,
	binaryEvent,
	encodeBinaryFrameHeader,
} from '../../wire/binary-frame.js'
import { encodeFrame, FrameError, parseFramePayload, STREAM_TERMINATOR } from '../../wire/frame.js'
import { type FrameItem, FrameReader } from '../../wire/frame-reader.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { ExecutionRegistry } from '../executions/execution-registry.js'
import { type AgentGates, gateRefusal } from '../lifecycle/agent-gates.js'
import { OPS, type OpEntry } from '../ops/registry.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import type { AgentConfig } from './config.js'
import type { OpContext } from './op-context.js'
import { OpRefusal } from './op-refusal.js'
import type { PreauthPool } from './preauth-pool.js'
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
	/** Token modes: the shared bounds on unauthenticated connections (absent ⇒ unbounded). */
	readonly preauth?: PreauthPool
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

export function handleConnection(socket: Socket, services: ConnectionServices): void {
	const { config, gate } = services
	const ops = services.ops ?? OPS
	const log = services.log ?? (() => {})
	const reader = gate.enabled
		? new FrameReader({
				maxFrameBytes: config.maxPreauthFrameBytes,
				limitVariable: PREAUTH_LIMIT_VARIABLE,
			})
		: new FrameReader({ maxFrameBytes: config.maxFrameBytes, limitVariable: FULL_LIMIT_VARIABLE })

	let phase: 'envelope' | 'dispatched' | 'refused' = 'envelope'
	let binaryFrames = false
	let closed = false
	let answered = false
	const frameListeners: Array<(message: Record<string, unknown>) => void> = []
	const pendingFrames: Record<string, unknown>[] = []
	const closeListeners: Array<() => void> = []

	// A function, so control-flow narrowing does not assume `phase` survives a dispatch unchanged.
	const isRefused = () => phase === 'refused'
	const refuse = (error: string) => {
		if (phase === 'refused') return
		phase = 'refused'
		preauth?.release()
		refuseAndDestroy(socket, { ok: false, error }, config.refusalFlushGraceMs)
	}
	// Only token modes bound unauthenticated peers; the member leaves the pool on authentication.
	const preauth = gate.enabled ? services.preauth?.admit(refuse) : undefined

	const deliver = (message: Record<string, unknown>) => {
		for (const listener of frameListeners) {
			try {
				listener(message)
			} catch (error) {
				log(`frame listener failed: ${error instanceof Error ? error.message : String(error)}`)
				socket.destroy()
				return
			}
		}
	}

	const ctx: OpContext = {
		config,
		socket,
		executions: services.executions,
		gates: services.gates,
		workloadCgroups: services.workloadCgroups,
		reply(message) {
			if (answered || closed) return
			answered = true
			socket.end(encodeFrame(message))
		},
		send(event) {
			// After close (or the end of the answer) events are dropped; there is no drain to wait for.
			if (answered || closed) return true
			return socket.write(encodeFrame(event))
		},
		sendFrame(frame, onFlushed) {
			if (answered || closed) {
				onFlushed?.()
				return true
			}
			return onFlushed ? socket.write(frame, () => onFlushed()) : socket.write(frame)
		},
		get binaryFrames() {
			return binaryFrames
		},
		sendBinary(channel, bytes, onFlushed) {
			if (!binaryFrames) throw new Error('sendBinary on a connection without binary frames')
			if (answered || closed) {
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
			if (answered || closed) return
			answered = true
			socket.end(STREAM_TERMINATOR)
		},
		onFrame(listener) {
			frameListeners.push(listener)
			if (frameListeners.length === 1 && pendingFrames.length > 0) {
				for (const message of pendingFrames.splice(0)) deliver(message)
				if (!closed) socket.resume()
			}
		},
		onClose(listener) {
			if (closed) queueMicrotask(listener)
			else closeListeners.push(listener)
		},
		get closed() {
			return closed
		},
	}

	const answerError = (entry: OpEntry, error: unknown) => {
		const refusal = error instanceof OpRefusal ? error : undefined
		const text = refusal ? refusal.error : error instanceof Error ? error.message : String(error)
		if (!refusal) log(`handler failed: ${text}`)
		if (closed || answered) return
		if (entry.stream) {
			ctx.send({ type: 'error', error: text })
			ctx.endStream()
		} else {
			ctx.reply({
				ok: false,
				error: text,
				...(refusal?.detail === undefined ? {} : { message: refusal.detail }),
			})
		}
	}

	const dispatch = (envelope: Record<string, unknown>) => {
		const entry = lookupOp(ops, envelope.op)
		if (!entry?.public && gate.enabled) {
			if (!gate.authenticate(envelope.token)) {
				refuse(AGENT_REFUSAL.unauthorized)
				return
			}
			reader.setLimit(config.maxFrameBytes, FULL_LIMIT_VARIABLE)
			preauth?.release()
		}
		if (!entry) {
			ctx.reply({
				ok: false,
				error: formatRefusal(AGENT_REFUSAL.unknown_op, describeOp(envelope.op)),
			})
			return
		}
		const closedGate = gateRefusal(services.gates, String(envelope.op))
		if (closedGate !== undefined) {
			answerError(entry, new OpRefusal(closedGate))
			return
		}
		const body = isRecord(envelope.body) ? envelope.body : {}
		if (entry.binaryFrames && config.binaryFrames && asksForBinaryFrames(body)) {
			binaryFrames = true
			reader.allowBinary()
		}
		try {
			const pending = entry.handler(body, ctx)
			if (pending instanceof Promise) pending.catch((error: unknown) => answerError(entry, error))
		} catch (error) {
			answerError(entry, error)
		}
	}

	const consume = (item: FrameItem): boolean => {
		if (item.kind === 'end') {
			// A terminator where an envelope belongs is a broken peer; after it, nothing to do.
			if (phase !== 'envelope') return true
			socket.destroy()
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
				socket.destroy()
				return false
			}
		}
		if (phase === 'envelope') {
			phase = 'dispatched'
			dispatch(message)
		} else if (frameListeners.length > 0) {
			deliver(message)
		} else {
			// Hold early frames for a handler that subscribes late, and stop reading meanwhile.
			pendingFrames.push(message)
			socket.pause()
		}
		return true
	}

	socket.on('data', (chunk: Buffer) => {
		if (isRefused()) return
		const overBudget = preauth?.receive(chunk.length)
		if (overBudget !== undefined) {
			refuse(overBudget)
			return
		}
		try {
			// The envelope alone first: it decides whether the frames behind it may be binary.
			let items = reader.push(chunk, phase === 'envelope' ? 1 : undefined)
			preauth?.settle(reader.bufferedBytes)
			while (items.length > 0) {
				const wasEnvelope = phase === 'envelope'
				for (const item of items) {
					if (isRefused() || socket.destroyed || !consume(item)) return
				}
				items = wasEnvelope && reader.bufferedBytes > 0 ? reader.push(EMPTY) : []
			}
		} catch (error) {
			if (error instanceof FrameError) {
				refuse(error.message)
				return
			}
			log(`connection failed: ${error instanceof Error ? error.message : String(error)}`)
			socket.destroy()
		}
	})
	socket.on('error', () => {
		// Resets and EPIPEs from vanished peers are routine; 'close' follows and cleans up.
	})
	socket.once('close', () => {
		closed = true
		preauth?.release()
		for (const listener of closeListeners.splice(0)) {
			try {
				listener()
			} catch (error) {
				log(`close listener failed: ${error instanceof Error ? error.message : String(error)}`)
			}
		}
	})
}
