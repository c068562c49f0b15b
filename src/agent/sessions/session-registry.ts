/**
 * The process-wide session registry: at most `maxSessions` records,
 * running and exited alike; an exited record and its output are kept `terminalTtlMs` and then
 * removed. It lives only in this process's memory — nothing is written to disk, so a restarted
 * guest holds no sessions.
 *
 * The registry is created on the first session request (`sessionRegistry`), never before: a guest
 * that is never asked for a session holds no session state, and read-only ops (`list-sessions`,
 * `attach-session`, `kill-session`) look it up with `existingSessionRegistry` without creating it.
 * Creating it registers one shutdown hook that SIGKILLs every running session with the agent.
 */
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { SessionKind } from '../../wire/sessions.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { registerShutdownHook } from '../lifecycle/shutdown-hooks.js'
import { Session } from './session.js'
import type { SessionConfig } from './session-config.js'

export class SessionRegistry {
	readonly config: SessionConfig
	readonly #sessions = new Map<string, Session>()
	readonly #expiry = new Map<string, NodeJS.Timeout>()

	constructor(config: SessionConfig) {
		this.config = config
	}

	get size(): number {
		return this.#sessions.size
	}

	/**
	 * Reserves `sessionId` for a program about to be spawned. Refuses an id already held (running
	 * or exited within its TTL) and a full registry.
	 */
	create(sessionId: string, kind: SessionKind, command: string, args: readonly string[]): Session {
		if (this.#sessions.has(sessionId)) throw new OpRefusal(AGENT_REFUSAL.session_exists)
		if (this.#sessions.size >= this.config.maxSessions) {
			throw new OpRefusal(
				AGENT_REFUSAL.session_capacity,
				formatRefusal(
					AGENT_REFUSAL.session_capacity,
					`limit ${this.config.maxSessions} (NAMZU_AGENT_MAX_SESSIONS)`,
				),
			)
		}
		const session = new Session({ sessionId, kind, command, args }, this.config.logBytes, (ended) =>
			this.#scheduleExpiry(ended),
		)
		this.#sessions.set(sessionId, session)
		return session
	}

	get(sessionId: string): Session | undefined {
		return this.#sessions.get(sessionId)
	}

	/** Drops a record at once (a spawn that failed before the program existed). */
	remove(session: Session): void {
		if (this.#sessions.get(session.sessionId) !== session) return
		this.#sessions.delete(session.sessionId)
		clearTimeout(this.#expiry.get(session.sessionId))
		this.#expiry.delete(session.sessionId)
	}

	list(): Session[] {
		return [...this.#sessions.values()]
	}

	/** SIGKILL for every running session's processes (agent shutdown). */
	killAll(): void {
		for (const session of this.#sessions.values()) {
			if (session.state === 'running') session.program?.teardown()
		}
	}

	#scheduleExpiry(session: Session): void {
		const timer = setTimeout(() => this.remove(session), this.config.terminalTtlMs)
		timer.unref()
		this.#expiry.set(session.sessionId, timer)
	}
}

let processRegistry: SessionRegistry | undefined

/** The agent's registry, created (with its shutdown hook) by the first session request. */
export function sessionRegistry(config: SessionConfig): SessionRegistry {
	if (!processRegistry) {
		const registry = new SessionRegistry(config)
		processRegistry = registry
		registerShutdownHook(() => registry.killAll())
	}
	return processRegistry
}

/** The registry if a session was ever asked for; never creates one. */
export function existingSessionRegistry(): SessionRegistry | undefined {
	return processRegistry
}
