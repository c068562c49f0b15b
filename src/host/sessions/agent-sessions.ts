/**
 * The host's session verbs over one agent transport, with the names the Kubernetes workspace will
 * share: `openTerminal({ …, sessionId, persistent: true })`,
 * `attachTerminal`, `startDetached`, `readSession`, `listSessions`, `killSession`. `AgentSandbox`
 * delegates to one `AgentSessions` and closes (detaches) the terminals it handed out on destroy.
 *
 * Every verb first checks the guest advertises `sessions` and otherwise throws
 * `SessionsUnsupportedError` before any session request is dialed — never a downgrade to a
 * connection-bound terminal. Guest refusals become `SessionRefusedError` with the guest's code
 * (through the one table, `../refusals/refusal-to-error.ts`).
 */

import type { BackgroundJobOutput } from '../../contract/background-job-output.js'
import type { OpenTerminalOptions, TerminalSize } from '../../contract/sandbox.js'
import { SESSIONS_FEATURE } from '../../wire/features.js'
import { AGENT_OP, type AgentOp } from '../../wire/protocol.js'
import type { WireRefusal } from '../../wire/refusals.js'
import {
	AgentOpRefusedError,
	AgentUnauthorizedError,
	RemoteProtocolError,
} from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { DEFAULT_SESSION_READ_MAX_BYTES } from '../transport/agent-transport-options.js'
import { refusalOf, streamRefusalOf } from '../transport/exchange.js'
import type { FrameChannel } from '../transport/frame-channel.js'
import { requireGuestFeature } from '../transport/guest-features.js'
import { AgentSessionTerminal, type SessionTerminal } from './agent-session-terminal.js'
import {
	type KilledSession,
	parseSessionOutput,
	parseSessionSummary,
	type SessionSummary,
	type StartedSession,
} from './session-summary.js'

/** `openTerminal` options that make the PTY a persistent guest session. */
export interface PersistentTerminalOptions extends OpenTerminalOptions {
	readonly sessionId: string
	readonly persistent: true
}

/** Options of `startDetached`: a program with stdin closed, kept by the guest under `sessionId`. */
export interface StartDetachedOptions {
	/** 1–64 characters, the first alphanumeric, then `[A-Za-z0-9._-]`. */
	readonly sessionId: string
	readonly command: string
	readonly args?: readonly string[]
	readonly cwd?: string
	/** On top of the guest's scrubbed environment. */
	readonly env?: Readonly<Record<string, string>>
	readonly signal?: AbortSignal
}

/** Options of `attachTerminal`. */
export interface AttachTerminalOptions {
	/** Default: the oldest byte the guest still holds. */
	readonly fromOffset?: number
	/** Resize the PTY on attach (terminal sessions). */
	readonly size?: TerminalSize
	readonly signal?: AbortSignal
}

/** Options of `readSession`. */
export interface ReadSessionOptions {
	readonly fromOffset?: number
	readonly signal?: AbortSignal
	/**
	 * Largest reply the host accepts for this read (the chunk as the guest encodes it), default
	 * `DEFAULT_SESSION_READ_MAX_BYTES` (64 MiB, 64× the guest's default ring); a larger reply is
	 * refused as a `RemoteProtocolError` before it is buffered.
	 */
	readonly maxBytes?: number
}

/** Options of `listSessions`. */
export interface ListSessionsOptions {
	readonly signal?: AbortSignal
}

/** Options of `killSession`. */
export interface KillSessionOptions {
	/** `SIGTERM`, `SIGKILL`, `SIGINT` or `SIGHUP` (else `SIGTERM`, by the guest). Default `SIGKILL`. */
	readonly signal?: string
	/** Cancels the call (the option name `signal` is the POSIX signal here). */
	readonly abortSignal?: AbortSignal
}

export function isPersistentTerminalOptions(
	options: OpenTerminalOptions,
): options is PersistentTerminalOptions {
	const candidate = options as Partial<PersistentTerminalOptions>
	return candidate.persistent === true || candidate.sessionId !== undefined
}

/** The guest's refusal of a session op as a named error (`unauthorized` keeps its own class). */
function sessionRefusal(
	operation: string,
	op: AgentOp,
	sessionId: string,
	refusal: WireRefusal,
): Error {
	return refusalToError('session', refusal, { op, operation, sessionId })
}

export class AgentSessions {
	readonly transport: AgentTransport
	readonly #terminals = new Set<AgentSessionTerminal>()

	constructor(transport: AgentTransport) {
		this.transport = transport
	}

	/** Throws `SessionsUnsupportedError` unless the guest advertises `sessions` (healthz only). */
	async require(operation: string, signal?: AbortSignal): Promise<void> {
		await requireGuestFeature(this.transport, SESSIONS_FEATURE, operation, signal)
	}

	async startDetached(options: StartDetachedOptions): Promise<StartedSession> {
		const { sessionId, command, args, cwd, env, signal } = options
		await this.require('startDetached', signal)
		const body = {
			sessionId,
			command,
			...(args === undefined ? {} : { args }),
			...(cwd === undefined ? {} : { cwd }),
			...(env === undefined ? {} : { env }),
		}
		const reply = await this.#call('startDetached', AGENT_OP.startDetached, sessionId, body, signal)
		const pid = reply.pid
		if (typeof pid !== 'number') throw new RemoteProtocolError('start-detached: no pid in reply')
		return { ...parseSessionSummary(reply), pid }
	}

	async openTerminal(
		options: PersistentTerminalOptions,
		signal?: AbortSignal,
	): Promise<SessionTerminal> {
		await this.require('openTerminal', signal)
		const body = {
			...(options.command === undefined ? {} : { command: options.command }),
			...(options.args === undefined ? {} : { args: options.args }),
			...(options.cwd === undefined ? {} : { cwd: options.cwd }),
			...(options.env === undefined ? {} : { env: options.env }),
			cols: options.size.cols,
			rows: options.size.rows,
			sessionId: options.sessionId,
			// As given: an id without `persistent: true` is refused by the guest, never downgraded.
			persistent: (options as { readonly persistent?: unknown }).persistent,
		}
		return this.#attach('openTerminal', AGENT_OP.terminal, options.sessionId, body, signal)
	}

	async attachTerminal(
		sessionId: string,
		options: AttachTerminalOptions = {},
	): Promise<SessionTerminal> {
		await this.require('attachTerminal', options.signal)
		const body = {
			sessionId,
			...(options.fromOffset === undefined ? {} : { fromOffset: options.fromOffset }),
			...(options.size === undefined ? {} : { cols: options.size.cols, rows: options.size.rows }),
		}
		return this.#attach('attachTerminal', AGENT_OP.attachSession, sessionId, body, options.signal)
	}

	/** One read of the session's ring; not an attachment: it displaces nobody, signals nothing. */
	async readSession(
		sessionId: string,
		options: ReadSessionOptions = {},
	): Promise<BackgroundJobOutput> {
		// `maxBytes` was checked where the call entered (`sandbox/sandbox-arguments.ts`).
		const maxFrameBytes = options.maxBytes ?? DEFAULT_SESSION_READ_MAX_BYTES
		await this.require('readSession', options.signal)
		const body = {
			sessionId,
			follow: false,
			...(options.fromOffset === undefined ? {} : { fromOffset: options.fromOffset }),
		}
		let output: Record<string, unknown> | undefined
		const events = this.transport.stream(AGENT_OP.attachSession, body, {
			...(options.signal ? { signal: options.signal } : {}),
			maxFrameBytes,
		})
		try {
			for await (const event of events) {
				const refusal = streamRefusalOf(event)
				if (refusal) throw sessionRefusal('readSession', AGENT_OP.attachSession, sessionId, refusal)
				if (output) throw new RemoteProtocolError('attach-session: a read answered more than once')
				output = event
			}
		} catch (error) {
			// `stream` throws `{ ok: false }` refusals itself; give them the session shape too.
			if (error instanceof AgentOpRefusedError && !(error instanceof AgentUnauthorizedError)) {
				throw sessionRefusal('readSession', AGENT_OP.attachSession, sessionId, error.refusal)
			}
			throw error
		}
		if (!output) throw new RemoteProtocolError('attach-session: the read answered nothing')
		return parseSessionOutput(output)
	}

	async listSessions(options: ListSessionsOptions = {}): Promise<SessionSummary[]> {
		await this.require('listSessions', options.signal)
		const reply = await this.#call('listSessions', AGENT_OP.listSessions, '', {}, options.signal)
		if (!Array.isArray(reply.sessions)) {
			throw new RemoteProtocolError('list-sessions: no sessions array in reply')
		}
		return reply.sessions.map((row: unknown) => {
			if (row === null || typeof row !== 'object') {
				throw new RemoteProtocolError('list-sessions: a row is not an object')
			}
			return parseSessionSummary(row as Record<string, unknown>)
		})
	}

	async killSession(sessionId: string, options: KillSessionOptions = {}): Promise<KilledSession> {
		await this.require('killSession', options.abortSignal)
		const body = { sessionId, ...(options.signal === undefined ? {} : { signal: options.signal }) }
		const reply = await this.#call(
			'killSession',
			AGENT_OP.killSession,
			sessionId,
			body,
			options.abortSignal,
		)
		const signalled = typeof reply.signalled === 'number' ? reply.signalled : 0
		return { ...parseSessionSummary(reply), signalled }
	}

	/** Detaches every session terminal handed out (destroy); the programs keep running. */
	async closeAll(): Promise<void> {
		const terminals = [...this.#terminals]
		this.#terminals.clear()
		await Promise.all(terminals.map((terminal) => terminal.detach()))
	}

	async #call(
		operation: string,
		op: AgentOp,
		sessionId: string,
		body: object,
		signal: AbortSignal | undefined,
	): Promise<Record<string, unknown>> {
		const reply = await this.transport.request(op, body, signal ? { signal } : {})
		const refusal = refusalOf(reply)
		if (refusal) throw sessionRefusal(operation, op, sessionId, refusal)
		return reply
	}

	async #attach(
		operation: string,
		op: AgentOp,
		sessionId: string,
		body: object,
		signal: AbortSignal | undefined,
	): Promise<SessionTerminal> {
		const { channel, ready } = await this.#openStream(operation, op, sessionId, body, signal)
		const terminal = new AgentSessionTerminal(channel, ready, sessionId, this.transport.liveness)
		this.#terminals.add(terminal)
		const forget = () => this.#terminals.delete(terminal)
		terminal.exited.then(forget, forget)
		return terminal
	}

	/** Opens a two-way session stream; a refusal before `ready` names the session. */
	#openStream(
		operation: string,
		op: AgentOp,
		sessionId: string,
		body: object,
		signal: AbortSignal | undefined,
	): Promise<{ channel: FrameChannel; ready: Record<string, unknown> }> {
		return this.transport.openStream(op, body, {
			...(signal ? { signal } : {}),
			mapRefusal: (refusal) => sessionRefusal(operation, op, sessionId, refusal),
		})
	}
}
