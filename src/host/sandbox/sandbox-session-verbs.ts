/**
 * The session verbs of `AgentSandbox` (agent-sessions.ts over the transport): each checks its
 * arguments, runs under the handle's lifetime, and a session terminal handed out after `destroy()`
 * began is detached at once, then refused. The guest's sessions die with the unit `release` stops;
 * `closeAll` only detaches the terminals handed out.
 */
import type { BackgroundJobOutput } from '../../contract/background-job-output.js'
import type { SessionTerminal } from '../sessions/agent-session-terminal.js'
import {
	AgentSessions,
	type AttachTerminalOptions,
	type KillSessionOptions,
	type ListSessionsOptions,
	type PersistentTerminalOptions,
	type ReadSessionOptions,
	type StartDetachedOptions,
} from '../sessions/agent-sessions.js'
import type { KilledSession, SessionSummary, StartedSession } from '../sessions/session-summary.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import {
	checkKillSession,
	checkSessionRead,
	checkSignalOnly,
	checkStartDetached,
} from './sandbox-arguments.js'
import type { SandboxLifetime } from './sandbox-lifetime.js'

export interface SandboxSessionVerbsHost {
	readonly transport: AgentTransport
	readonly lifetime: SandboxLifetime
	/** A checked optional sandbox path (a `cwd`), resolved against `rootDir`. */
	readonly optionalPath: (method: string, parameter: string, path: unknown) => string | undefined
}

export class SandboxSessionVerbs {
	readonly #host: SandboxSessionVerbsHost
	/** Created on first use. */
	#verbs: AgentSessions | undefined

	constructor(host: SandboxSessionVerbsHost) {
		this.#host = host
	}

	get #sessions(): AgentSessions {
		this.#verbs ??= new AgentSessions(this.#host.transport)
		return this.#verbs
	}

	startDetached(options: StartDetachedOptions): Promise<StartedSession> {
		let cwd: string | undefined
		const check = () => {
			const signal = checkStartDetached(options)
			cwd = this.#host.optionalPath('startDetached', 'options.cwd', options.cwd)
			return signal
		}
		return this.#host.lifetime.run('startDetached', check, (signal) =>
			this.#sessions.startDetached({ ...options, signal, ...(cwd === undefined ? {} : { cwd }) }),
		)
	}

	/** A persistent terminal, its arguments already checked by `openTerminal`. */
	async openPersistent(
		options: PersistentTerminalOptions,
		signal: AbortSignal,
	): Promise<SessionTerminal> {
		return this.#own(await this.#sessions.openTerminal(options, signal), 'openTerminal')
	}

	attachTerminal(sessionId: string, options: AttachTerminalOptions = {}): Promise<SessionTerminal> {
		const check = () => checkSessionRead('attachTerminal', sessionId, options)
		return this.#host.lifetime.run('attachTerminal', check, async (signal) =>
			this.#own(
				await this.#sessions.attachTerminal(sessionId, { ...options, signal }),
				'attachTerminal',
			),
		)
	}

	readSession(sessionId: string, options: ReadSessionOptions = {}): Promise<BackgroundJobOutput> {
		const check = () => checkSessionRead('readSession', sessionId, options)
		return this.#host.lifetime.run('readSession', check, (signal) =>
			this.#sessions.readSession(sessionId, { ...options, signal }),
		)
	}

	listSessions(options: ListSessionsOptions = {}): Promise<SessionSummary[]> {
		const check = () => checkSignalOnly('listSessions', options)
		return this.#host.lifetime.run('listSessions', check, (signal) =>
			this.#sessions.listSessions({ signal }),
		)
	}

	killSession(sessionId: string, options: KillSessionOptions = {}): Promise<KilledSession> {
		const check = () => checkKillSession(sessionId, options)
		return this.#host.lifetime.run('killSession', check, (abortSignal) =>
			this.#sessions.killSession(sessionId, { ...options, abortSignal }),
		)
	}

	/** Detaches every session terminal handed out (destroy). */
	async closeAll(): Promise<void> {
		await this.#verbs?.closeAll()
	}

	async #own(terminal: SessionTerminal, operation: string): Promise<SessionTerminal> {
		await this.#host.lifetime.refuseIfGone(operation, () => terminal.detach())
		return terminal
	}
}
