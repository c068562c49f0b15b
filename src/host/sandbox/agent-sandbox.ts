/**
 * The one `Sandbox` over a guest agent, reused by every tier: it adds to `AgentTransport` the
 * contract's lifecycle — `busy` while any call is in flight, relative paths against `rootDir`,
 * exec through `RemoteExecutionController`, ownership of every terminal and tcp connection it hands
 * out, and an idempotent `destroy()` that aborts in-flight calls, kills and awaits what it owns,
 * then releases the unit. After `destroy()` every call is refused with `SandboxDestroyedError`
 * (members returning iterables refuse synchronously); after an unconfirmable cancellation the unit
 * is retired and the handle fenced (`SandboxRetiredError`). No `setNetworkPolicy`: a tier that can
 * enforce one adds it.
 */

import { setMaxListeners } from 'node:events'
import { posix } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { callSite } from '../../contract/argument-validators.js'
import type { BackgroundJobOutput } from '../../contract/background-job-output.js'
import { SandboxDestroyedError, SandboxFileError } from '../../contract/errors.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type {
	OpenTerminalOptions,
	Sandbox,
	SandboxDestroyOptions,
	SandboxEnvironment,
	SandboxExecResult,
	SandboxFileEntry,
	SandboxListFilesOptions,
	SandboxReadFileOptions,
	SandboxReadFileStreamOptions,
	SandboxStatus,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	SandboxWalkFilesOptions,
	SandboxWriteFileOptions,
	TerminalSession,
} from '../../contract/sandbox.js'
import { walkFilesViaExec } from '../../exec-programs/walk/walk-files-via-exec.js'
import { agentExecutionAdapter } from '../exec/agent-execution-adapter.js'
import {
	type AttachExecutionOptions,
	type CancelExecutionOptions,
	type DetachableExecOptions,
	isDetachable,
} from '../exec/detachable-exec-options.js'
import {
	attachToExecution,
	cancelExecutionById,
	type DetachableExecutionHost,
	execDetachable,
} from '../exec/detachable-execution.js'
import {
	RemoteExecutionController,
	type RemoteExecutionControllerOptions,
} from '../exec/remote-execution-controller.js'
import type { RemoteCancellationAcknowledgement } from '../exec/remote-execution-messages.js'
import {
	listFilesThroughAgent,
	readFileStreamThroughAgent,
	readFileThroughAgent,
} from '../files/agent-file-read.js'
import { writeFileThroughAgent } from '../files/agent-file-write.js'
import {
	type FlushOptions,
	type FlushReport,
	flushThroughAgent,
	type QuiesceOptions,
	type QuiesceReport,
	quiesceThroughAgent,
} from '../lifecycle/agent-lifecycle-ops.js'
import { RemoteCancellationUnknownError } from '../refusals/execution-refusal-errors.js'
import type { SessionTerminal } from '../sessions/agent-session-terminal.js'
import {
	AgentSessions,
	type AttachTerminalOptions,
	isPersistentTerminalOptions,
	type KillSessionOptions,
	type ListSessionsOptions,
	type PersistentTerminalOptions,
	type ReadSessionOptions,
	type StartDetachedOptions,
} from '../sessions/agent-sessions.js'
import type { KilledSession, SessionSummary, StartedSession } from '../sessions/session-summary.js'
import type { AgentTcpConnection } from '../transport/agent-tcp-connection.js'
import type { AgentTerminalSession } from '../transport/agent-terminal-session.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import {
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
	tcpTargetRefusal,
} from './agent-sandbox-errors.js'
import {
	checkAttachExecution,
	checkCancelExecution,
	checkExec,
	checkFlush,
	checkKillSession,
	checkOpenTcpConnection,
	checkOpenTerminal,
	checkQuiesce,
	checkReadRange,
	checkSessionRead,
	checkSignalOnly,
	checkStartDetached,
	checkWalkFiles,
	checkWriteFile,
	sandboxPath,
} from './sandbox-arguments.js'

/** How long `destroy()` lets aborted in-flight calls settle before releasing the unit. */
export const DESTROY_IN_FLIGHT_SETTLE_MS = 2000

export interface AgentSandboxOptions {
	readonly id: string
	readonly transport: AgentTransport
	/** Workspace root as the guest sees it; relative paths and `cwd`s resolve against it. */
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	/** `exec` timeout when a call names none. Default 5 min. */
	readonly defaultTimeoutMs?: number
	/** Frees the unit (process, VM, pod). Called once per successful `destroy()`. */
	readonly release: (signal?: AbortSignal) => Promise<void>
	/** Removes the whole unit after an unconfirmable cancellation. */
	readonly retire?: (error: Error) => Promise<SandboxRetirementObservation>
	/** Overrides of the execution controller's windows (tests shorten them). */
	readonly execution?: Omit<RemoteExecutionControllerOptions, 'defaultExecutionTimeoutMs'>
}

export class AgentSandbox implements Sandbox {
	readonly id: string
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	readonly transport: AgentTransport
	readonly #options: AgentSandboxOptions
	readonly #controller: RemoteExecutionController
	readonly #lifetime = new AbortController()
	readonly #inFlight = new Set<Promise<unknown>>()
	readonly #terminals = new Set<AgentTerminalSession>()
	readonly #connections = new Set<AgentTcpConnection>()
	/** Session verbs and the session terminals handed out; created on first use. */
	#sessionVerbs: AgentSessions | undefined
	#destroyed = false
	#retirement: Promise<SandboxRetirementObservation> | undefined
	#teardown: Promise<void> | undefined

	constructor(options: AgentSandboxOptions) {
		// Every in-flight call listens on the lifetime signal (destroy aborts them all); any number of
		// concurrent calls is legitimate, so the default 10-listener warning would be a false alarm.
		setMaxListeners(0, this.#lifetime.signal)
		this.#options = options
		this.id = options.id
		this.rootDir = options.rootDir
		this.environment = options.environment
		this.transport = options.transport
		this.#controller = new RemoteExecutionController(agentExecutionAdapter(options.transport), {
			controlRequestTimeoutMs: options.transport.options.controlRequestTimeoutMs,
			...options.execution,
			...(options.defaultTimeoutMs === undefined
				? {}
				: { defaultExecutionTimeoutMs: options.defaultTimeoutMs }),
		})
	}

	get status(): SandboxStatus {
		if (this.#destroyed || this.#retirement) return 'destroyed'
		return this.#inFlight.size > 0 ? 'busy' : 'ready'
	}

	/** What the retirement after an unconfirmable cancellation observed, once there was one. */
	get retirement(): Promise<SandboxRetirementObservation> | undefined {
		return this.#retirement
	}

	exec(
		command: string,
		args: readonly string[] = [],
		options: DetachableExecOptions = {},
	): Promise<SandboxExecResult> {
		let cwd: string | undefined
		const check = () => {
			const signal = checkExec(command, args, options)
			cwd = this.#optionalPath('exec', 'options.cwd', options.cwd)
			return signal
		}
		return this.#run('exec', check, async (signal) => {
			const resolved = { ...options, signal, ...(cwd === undefined ? {} : { cwd }) }
			if (isDetachable(options)) {
				return this.#guard(() => execDetachable(this.#detachableHost, command, args, resolved))
			}
			return this.#guard(() => this.#controller.exec(command, args, resolved))
		})
	}

	/**
	 * Follows a detachable execution by id (detachable-execution.ts) to the result its `exec` would
	 * have produced; aborting `signal` only detaches. `ExecutionNotAttachableError` on a refusal.
	 */
	attachExecution(
		executionId: string,
		options: AttachExecutionOptions = {},
	): Promise<SandboxExecResult> {
		const check = () => checkAttachExecution(executionId, options)
		return this.#run('attachExecution', check, (signal) =>
			attachToExecution(this.#detachableHost, executionId, { ...options, signal }),
		)
	}

	/** Confirmed cancel by id from any process holding it; an unconfirmed one retires nothing. */
	cancelExecution(
		executionId: string,
		options: CancelExecutionOptions = {},
	): Promise<RemoteCancellationAcknowledgement> {
		const check = () => checkCancelExecution(executionId, options)
		return this.#run('cancelExecution', check, (signal) =>
			cancelExecutionById(this.#detachableHost, executionId, signal),
		)
	}

	get #detachableHost(): DetachableExecutionHost {
		const controller = this.#controller
		return {
			transport: this.transport,
			controlRequestTimeoutMs: controller.controlRequestTimeoutMs,
			cancelConfirmTimeoutMs: controller.cancelConfirmTimeoutMs,
			resultDrainTimeoutMs: controller.resultDrainTimeoutMs,
			defaultExecutionTimeoutMs: controller.defaultExecutionTimeoutMs,
		}
	}

	writeFile(
		path: string,
		content: string | Uint8Array,
		options: SandboxWriteFileOptions = {},
	): Promise<void> {
		let resolved = ''
		const check = () => {
			resolved = this.#path('writeFile', 'path', path)
			return checkWriteFile(content, options)
		}
		return this.#run('writeFile', check, (signal) =>
			writeFileThroughAgent(this.transport, resolved, content, signal),
		)
	}

	readFile(path: string, options: SandboxReadFileOptions = {}): Promise<Buffer> {
		let resolved = ''
		const check = () => {
			resolved = this.#path('readFile', 'path', path)
			return checkReadRange('readFile', options)
		}
		return this.#run('readFile', check, (signal) =>
			readFileThroughAgent(this.transport, resolved, { ...options, signal }),
		)
	}

	readFileStream(path: string, options: SandboxReadFileStreamOptions = {}): AsyncIterable<Buffer> {
		this.#admit('readFileStream')
		const resolved = this.#path('readFileStream', 'path', path)
		const caller = checkReadRange('readFileStream', options)
		return this.#track('readFileStream', caller, (signal) =>
			readFileStreamThroughAgent(this.transport, resolved, { ...options, signal }),
		)
	}

	listFiles(
		rootPath: string,
		options: SandboxListFilesOptions = {},
	): Promise<readonly SandboxFileEntry[]> {
		let resolved = ''
		const check = () => {
			resolved = this.#path('listFiles', 'rootPath', rootPath)
			return checkSignalOnly('listFiles', options)
		}
		return this.#run('listFiles', check, async (signal) => {
			try {
				return await listFilesThroughAgent(this.transport, resolved, signal)
			} catch (error) {
				if (error instanceof SandboxFileError && error.code === 'ENOENT') return []
				throw error
			}
		})
	}

	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry> {
		this.#admit('walkFiles')
		const resolved = this.#path('walkFiles', 'rootPath', rootPath)
		const caller = checkWalkFiles(options)
		return this.#track('walkFiles', caller, (signal) =>
			walkFilesViaExec(
				(command, args, execOptions) => this.exec(command, args, execOptions),
				resolved,
				{ ...options, signal },
			),
		)
	}

	/** With `sessionId` + `persistent: true` the PTY is a guest session (agent-sessions.ts). */
	openTerminal(options: PersistentTerminalOptions): Promise<SessionTerminal>
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession>
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession> {
		let cwd: string | undefined
		const check = () => {
			const signal = checkOpenTerminal(options)
			cwd = this.#optionalPath('openTerminal', 'options.cwd', options.cwd)
			return signal
		}
		return this.#run('openTerminal', check, async (signal) => {
			if (isPersistentTerminalOptions(options)) {
				const resolved = { ...options, ...(cwd === undefined ? {} : { cwd }) }
				return this.#ownSession(await this.#sessions.openTerminal(resolved, signal), 'openTerminal')
			}
			const session = await this.transport.openTerminal(
				{
					...(options.command === undefined ? {} : { command: options.command }),
					...(options.args === undefined ? {} : { args: options.args }),
					...(cwd === undefined ? {} : { cwd }),
					...(options.env === undefined ? {} : { env: options.env }),
					cols: options.size.cols,
					rows: options.size.rows,
				},
				signal,
			)
			return this.#own(session, this.#terminals, 'openTerminal', () => session.close())
		})
	}

	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection> {
		const check = () => checkOpenTcpConnection(options)
		return this.#run('openTcpConnection', check, async (signal) => {
			const host = options.host ?? '127.0.0.1'
			const refusal = tcpTargetRefusal(host, options.port)
			if (refusal !== undefined) throw new SandboxTcpTargetRefusedError(host, options.port, refusal)
			const connection = await this.transport.openTcpConnection(
				{ host: host === '::1' ? '::1' : '127.0.0.1', port: options.port },
				signal,
			)
			return this.#own(connection, this.#connections, 'openTcpConnection', () => connection.close())
		})
	}

	// ---- sessions (agent-sessions.ts): SessionsUnsupportedError before dialing an older guest ----

	/** A program with no PTY, stdin closed, in its own kernel session; it outlives this host. */
	startDetached(options: StartDetachedOptions): Promise<StartedSession> {
		let cwd: string | undefined
		const check = () => {
			const signal = checkStartDetached(options)
			cwd = this.#optionalPath('startDetached', 'options.cwd', options.cwd)
			return signal
		}
		return this.#run('startDetached', check, (signal) =>
			this.#sessions.startDetached({ ...options, signal, ...(cwd === undefined ? {} : { cwd }) }),
		)
	}

	/** Rejoins a session from any process: replay from `fromOffset`, then live; supersedes. */
	attachTerminal(sessionId: string, options: AttachTerminalOptions = {}): Promise<SessionTerminal> {
		const check = () => checkSessionRead('attachTerminal', sessionId, options)
		return this.#run('attachTerminal', check, async (signal) =>
			this.#ownSession(
				await this.#sessions.attachTerminal(sessionId, { ...options, signal }),
				'attachTerminal',
			),
		)
	}

	/** One read in the BackgroundJobOutput shape; not an attachment. */
	readSession(sessionId: string, options: ReadSessionOptions = {}): Promise<BackgroundJobOutput> {
		const check = () => checkSessionRead('readSession', sessionId, options)
		return this.#run('readSession', check, (signal) =>
			this.#sessions.readSession(sessionId, { ...options, signal }),
		)
	}

	listSessions(options: ListSessionsOptions = {}): Promise<SessionSummary[]> {
		const check = () => checkSignalOnly('listSessions', options)
		return this.#run('listSessions', check, (signal) => this.#sessions.listSessions({ signal }))
	}

	/** Signals everything still in the session (default SIGKILL) and reports whether it ended. */
	killSession(sessionId: string, options: KillSessionOptions = {}): Promise<KilledSession> {
		const check = () => checkKillSession(sessionId, options)
		return this.#run('killSession', check, (abortSignal) =>
			this.#sessions.killSession(sessionId, { ...options, abortSignal }),
		)
	}

	/** A session terminal handed out after destroy began is detached at once, then refused. */
	async #ownSession(terminal: SessionTerminal, operation: string): Promise<SessionTerminal> {
		if (this.#destroyed || this.#retirement) {
			await terminal.detach()
			this.#admit(operation)
		}
		return terminal
	}

	get #sessions(): AgentSessions {
		this.#sessionVerbs ??= new AgentSessions(this.transport)
		return this.#sessionVerbs
	}

	/**
	 * Stops every process in the guest (agent-lifecycle-ops.ts) and leaves the agent serving; the
	 * report names the scope. `QuiesceUnsupportedError` before dialing an agent without the op,
	 * `QuiesceUnconfirmedError` (with the pid) when a process outlived SIGKILL.
	 */
	quiesce(options: QuiesceOptions = {}): Promise<QuiesceReport> {
		return this.#run(
			'quiesce',
			() => checkQuiesce(options),
			(signal) => quiesceThroughAgent(this.transport, { ...options, signal }),
		)
	}

	/** `sync -f` of the guest's workspace filesystem; `FlushUnsupportedError`/`FlushUnconfirmedError`. */
	flush(options: FlushOptions = {}): Promise<FlushReport> {
		return this.#run(
			'flush',
			() => checkFlush(options),
			(signal) => flushThroughAgent(this.transport, { ...options, signal }),
		)
	}

	/** Idempotent; concurrent calls share one teardown. A failed teardown may be retried. */
	destroy(options: SandboxDestroyOptions = {}): Promise<void> {
		let signal: AbortSignal | undefined
		try {
			signal = checkSignalOnly('destroy', options)
		} catch (error) {
			return Promise.reject(error)
		}
		if (!this.#teardown) {
			this.#destroyed = true
			const teardown = this.#tearDown(signal)
			this.#teardown = teardown
			teardown.catch(() => {
				if (this.#teardown === teardown) this.#teardown = undefined
			})
		}
		return this.#teardown
	}

	async #tearDown(signal: AbortSignal | undefined): Promise<void> {
		this.#lifetime.abort(new SandboxDestroyedError(this.id, 'in-flight call'))
		// Aborted execs resolve as aborted once the guest confirms; give them a bounded moment.
		await Promise.race([
			Promise.allSettled([...this.#inFlight]),
			sleep(DESTROY_IN_FLIGHT_SETTLE_MS, undefined, { ref: false }),
		])
		await Promise.all([
			...[...this.#terminals].map((session) => session.close()),
			...[...this.#connections].map((connection) => connection.close()),
			// Detaches only: the guest's sessions die with the unit `release` stops.
			this.#sessionVerbs?.closeAll(),
		])
		this.#terminals.clear()
		this.#connections.clear()
		await this.#options.release(signal)
	}

	/** A checked sandbox path, resolved against `rootDir` (sandbox-arguments.ts). */
	#path(method: string, parameter: string, path: unknown): string {
		return sandboxPath(callSite(method), parameter, path, (given) =>
			posix.isAbsolute(given) ? given : posix.resolve(this.rootDir, given),
		)
	}

	#optionalPath(method: string, parameter: string, path: unknown): string | undefined {
		return path === undefined ? undefined : this.#path(method, parameter, path)
	}

	#admit(operation: string): void {
		if (this.#destroyed) throw new SandboxDestroyedError(this.id, operation)
		if (this.#retirement) throw new SandboxRetiredError(this.id, operation)
	}

	/** The caller's signal joined with the sandbox's lifetime (aborted by `destroy()`). */
	#signal(caller: AbortSignal | undefined): AbortSignal {
		return caller ? AbortSignal.any([caller, this.#lifetime.signal]) : this.#lifetime.signal
	}

	/** Admits the call, checks its arguments (`check` answers the caller's signal), then runs it. */
	async #run<T>(
		operation: string,
		check: () => AbortSignal | undefined,
		call: (signal: AbortSignal) => Promise<T>,
	): Promise<T> {
		this.#admit(operation)
		const pending = call(this.#signal(check()))
		this.#inFlight.add(pending)
		try {
			return await pending
		} finally {
			this.#inFlight.delete(pending)
		}
	}

	async *#track<T>(
		operation: string,
		caller: AbortSignal | undefined,
		open: (signal: AbortSignal) => AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		this.#admit(operation)
		let finish: () => void = () => {}
		const pending = new Promise<void>((resolve) => {
			finish = resolve
		})
		this.#inFlight.add(pending)
		try {
			yield* this.#guardIterable(open(this.#signal(caller)))
		} finally {
			this.#inFlight.delete(pending)
			finish()
		}
	}

	async *#guardIterable<T>(iterable: AsyncIterable<T>): AsyncGenerator<T, void, undefined> {
		try {
			yield* iterable
		} catch (error) {
			if (error instanceof RemoteCancellationUnknownError) await this.#retire(error)
			throw error
		}
	}

	async #guard<T>(call: () => Promise<T>): Promise<T> {
		try {
			return await call()
		} catch (error) {
			if (error instanceof RemoteCancellationUnknownError) await this.#retire(error)
			throw error
		}
	}

	/** Retires the unit once (later errors share the observation), records it, fences the handle. */
	async #retire(error: RemoteCancellationUnknownError): Promise<void> {
		if (error.retirement) return
		if (!this.#retirement) {
			const retire = this.#options.retire
			this.#retirement = retire
				? retire(error).catch(
						(failure: unknown): SandboxRetirementObservation => ({
							accepted: false,
							error: failure instanceof Error ? failure : new Error(String(failure)),
						}),
					)
				: Promise.resolve({ accepted: false, reason: 'retirement-unavailable' })
		}
		error.retirement = await this.#retirement
	}

	/** Registers a terminal or connection, or closes it if the sandbox went away meanwhile. */
	async #own<T extends { readonly closed?: Promise<void>; readonly exited?: Promise<unknown> }>(
		resource: T,
		owned: Set<T>,
		operation: string,
		close: () => Promise<unknown>,
	): Promise<T> {
		if (this.#destroyed || this.#retirement) {
			await close()
			this.#admit(operation)
		}
		owned.add(resource)
		const done = resource.exited ?? resource.closed
		void done?.then(() => owned.delete(resource))
		return resource
	}
}

/** Builds the agent-backed `Sandbox` every tier hands out. */
export function createAgentSandbox(options: AgentSandboxOptions): AgentSandbox {
	return new AgentSandbox(options)
}
