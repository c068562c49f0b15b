import type { Socket } from 'node:net'
import type { BinaryChannel } from '../../wire/binary-frame.js'
import type { ExecutionRegistry } from '../executions/execution-registry.js'
import type { AgentGates } from '../lifecycle/agent-gates.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import type { StartedAhead } from '../process/workload-spawn.js'
import type { AgentConfig } from './config.js'

/**
 * What an op handler gets for the one request its connection carries. The connection layer owns
 * framing, the token gate and teardown; a handler only answers.
 */
export interface OpContext {
	readonly config: AgentConfig
	readonly socket: Socket
	/** Request-shaped answer: one frame, then the connection is closed. */
	reply(message: object): void
	/**
	 * One event of a stream-shaped answer. Returns false when the socket wants the writer to wait for
	 * `drain`. Once the connection closed (or the answer ended) events are dropped and it returns
	 * true — there will be no `drain`; check `closed` to stop producing.
	 */
	send(event: object): boolean
	/**
	 * One already-encoded event frame (bulk data built by `encodeBase64DataFrame`). Same rules as
	 * `send`; `onFlushed` runs once the frame left the process (or was dropped), so its buffer may be
	 * reused.
	 */
	sendFrame(frame: Buffer, onFlushed?: () => void): boolean
	/**
	 * Whether this connection negotiated binary data frames (the op serves them, the agent has them
	 * on and the request asked): its bulk bytes then go by `sendBinary`, and the peer's may arrive as
	 * binary events (`binaryEventBytes`).
	 */
	readonly binaryFrames: boolean
	/**
	 * One binary data frame of `bytes` on `channel` (only when `binaryFrames`). Same rules as
	 * `sendFrame`; `bytes` must not change until `onFlushed` runs.
	 */
	sendBinary(channel: BinaryChannel, bytes: Uint8Array, onFlushed?: () => void): boolean
	/** Ends a stream-shaped answer: the zero-length terminator, then close. */
	endStream(): void
	/** Later frames from the peer on this connection (terminal input, tcp data, …). */
	onFrame(listener: (message: Record<string, unknown>) => void): void
	/** The connection closed, from either side. Fires once. */
	onClose(listener: () => void): void
	/**
	 * Calls `listener` with the size of every read from the peer (liveness counts bytes, not
	 * frames: the socket emits no `data` events). Returns the unsubscribe.
	 */
	onBytes(listener: (byteCount: number) => void): () => void
	readonly closed: boolean
	/** The agent's one execution registry (reserve / execute / cancel, and shutdown's kill list). */
	readonly executions: ExecutionRegistry
	/** Process-wide admission gates (retiring, quiescing); handlers that own those states set them. */
	readonly gates: AgentGates
	/** The tier's workload cgroups every command joins; undefined when none were configured. */
	readonly workloadCgroups: WorkloadCgroups | undefined
	/** Commands started ahead in their groups, taken by `execute`; undefined when none are kept. */
	readonly startedAhead: StartedAhead | undefined
	/** The process's token gate (`restored` switches it); `enabled` false on unix / vsock. */
	readonly tokenGate: TokenSwitch
	/** The agent's listener, which `release-listener` lets go of (absent in tests' own servers). */
	readonly channel: ChannelRelease | undefined
}

/** What a handler may do with the agent's listener (agent-channel.ts). */
export interface ChannelRelease {
	readonly releasable: boolean
	release(keep: Socket, relistenAfterMs: number): void
}

/** What a handler may do with the connection layer's token gate. */
export interface TokenSwitch {
	readonly enabled: boolean
	/** Only `token` passes from now on; every authenticated connection but `keep` is closed. */
	switchToken(token: string, keep: object): void
}

export type OpHandler = (body: Record<string, unknown>, ctx: OpContext) => void | Promise<void>
