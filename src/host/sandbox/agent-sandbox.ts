/**
 * The one `Sandbox` over a guest agent, reused by every tier: it adds to `AgentTransport` the
 * contract — every argument checked once on entry (`sandbox-arguments.ts`), relative paths against
 * `rootDir`, exec through `RemoteExecutionController` (detachable executions through
 * `detachable-execution.ts`), the file, session and lifecycle verbs — and its lifecycle through
 * `sandbox-lifetime.ts`: `busy` while any call is in flight, ownership of every terminal and tcp
 * connection it hands out, and an idempotent `destroy()` that aborts in-flight calls, kills and
 * awaits what it owns, then releases the unit. After `destroy()` every call is refused with
 * `SandboxDestroyedError` (members returning iterables refuse synchronously); after an
 * unconfirmable cancellation the unit is retired and the handle fenced (`SandboxRetiredError`);
 * once the tier reports the guest dead (`transport.liveness`) every call in flight and every later
 * one fails with its `GuestDiedError`, `status` is `destroyed` and `guestExit` says how it ended.
 * No `setNetworkPolicy`: a tier that can enforce one adds it.
 */

import { posix } from 'node:path'
import '../../contract/async-dispose.js'
import { callSite } from '../../contract/argument-validators.js'
import type { BackgroundJobOutput } from '../../contract/background-job-output.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type {
	OpenTerminalOptions,
	Sandbox,
	SandboxAttachProcessOptions,
	SandboxDestroyOptions,
	SandboxDirectoryPage,
	SandboxEnvironment,
	SandboxExecResult,
	SandboxExposedPort,
	SandboxExposePortOptions,
	SandboxFileEntry,
	SandboxFileStat,
	SandboxListDirectoryOptions,
	SandboxListFilesOptions,
	SandboxPathOptions,
	SandboxReadFileOptions,
	SandboxReadFileStreamOptions,
	SandboxRecursiveOptions,
	SandboxSpawnOptions,
	SandboxStatus,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	SandboxWalkFilesOptions,
	SandboxWatchEvent,
	SandboxWatchOptions,
	SandboxWriteFileOptions,
	TerminalSession,
} from '../../contract/sandbox.js'
import type { SandboxEventsOptions, SandboxLifecycleEvent } from '../../contract/sandbox-events.js'
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
	detachableHostOf,
	execDetachable,
} from '../exec/detachable-execution.js'
import { ExecOutputBudget } from '../exec/exec-output-budget.js'
import {
	RemoteExecutionController,
	type RemoteExecutionControllerOptions,
} from '../exec/remote-execution-controller.js'
import type { RemoteCancellationAcknowledgement } from '../exec/remote-execution-messages.js'
import { shownGuestWalk } from '../files/guest-path.js'
import {
	type FlushOptions,
	type FlushReport,
	flushThroughAgent,
	type QuiesceOptions,
	type QuiesceReport,
	quiesceThroughAgent,
} from '../lifecycle/agent-lifecycle-ops.js'
import { exposureSettings, PortExposure } from '../ports/port-exposure.js'
import type { SessionTerminal } from '../sessions/agent-session-terminal.js'
import {
	type AttachTerminalOptions,
	isPersistentTerminalOptions,
	type KillSessionOptions,
	type ListSessionsOptions,
	type PersistentTerminalOptions,
	type ReadSessionOptions,
	type StartDetachedOptions,
} from '../sessions/agent-sessions.js'
import type { KilledSession, SessionSummary, StartedSession } from '../sessions/session-summary.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import type { GuestExit } from '../transport/transport-errors.js'
import { SandboxTcpTargetRefusedError, tcpTargetRefusal } from './agent-sandbox-errors.js'
import {
	checkAttachExecution,
	checkCancelExecution,
	checkDestroyOptions,
	checkExec,
	checkExposePort,
	checkFlush,
	checkOpenTcpConnection,
	checkOpenTerminal,
	checkQuiesce,
	checkWalkFiles,
	sandboxPath,
} from './sandbox-arguments.js'
import { attachProcessIn, type BackgroundHost, spawnIn } from './sandbox-background.js'
import * as eventLog from './sandbox-event-log.js'
import { SandboxFileVerbs } from './sandbox-file-verbs.js'
import { SandboxLifetime, type SandboxLifetimeOptions } from './sandbox-lifetime.js'
import { SandboxSessionVerbs } from './sandbox-session-verbs.js'

/** What `createAgentSandbox` needs: the transport, the workspace root and how to release the unit. */
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
	/** Keeps the unit after an unconfirmable cancellation (`SandboxLifetimeOptions`). */
	readonly keepOnUnconfirmedCancellation?: SandboxLifetimeOptions['keepOnUnconfirmedCancellation']
	/** The tier's error for a guest that fenced itself (`SandboxLifetimeOptions`). */
	readonly fencedGuest?: SandboxLifetimeOptions['fencedGuest']
	/** Overrides of the execution controller's windows (tests shorten them). */
	readonly execution?: Omit<RemoteExecutionControllerOptions, 'defaultTimeoutMs' | 'outputBudget'>
	/**
	 * The budget of exec output held on the host that this sandbox shares with its provider's
	 * others (`ExecOutputBudget`). Default: one of `DEFAULT_EXEC_OUTPUT_BUDGET_BYTES` of its own.
	 */
	readonly outputBudget?: ExecOutputBudget
	/** Subscribes to the egress proxy's decisions, which `events()` then carries. */
	readonly egressDecisions?: eventLog.EgressDecisionSource
}

/** The one `Sandbox` over a guest agent, which every tier hands out. */
export class AgentSandbox implements Sandbox {
	readonly id: string
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	readonly transport: AgentTransport
	readonly #controller: RemoteExecutionController
	readonly #lifetime: SandboxLifetime
	#destroyCall: { readonly teardown: Promise<void>; readonly done: Promise<void> } | undefined
	readonly #sessions: SandboxSessionVerbs
	readonly #files: SandboxFileVerbs
	readonly #events: eventLog.SandboxEventLog
	#execCount = 0

	constructor(options: AgentSandboxOptions) {
		this.#lifetime = new SandboxLifetime({
			id: options.id,
			release: options.release,
			...(options.retire ? { retire: options.retire } : {}),
			...(options.keepOnUnconfirmedCancellation
				? { keepOnUnconfirmedCancellation: options.keepOnUnconfirmedCancellation }
				: {}),
			...(options.fencedGuest ? { fencedGuest: options.fencedGuest } : {}),
			liveness: options.transport.liveness,
		})
		this.id = options.id
		this.rootDir = options.rootDir
		this.environment = options.environment
		this.transport = options.transport
		this.#controller = new RemoteExecutionController(agentExecutionAdapter(options.transport), {
			controlRequestTimeoutMs: options.transport.options.controlRequestTimeoutMs,
			// A sandbox made without its provider's budget still holds its output to one of its own.
			outputBudget: options.outputBudget ?? new ExecOutputBudget(),
			...options.execution,
			...(options.defaultTimeoutMs === undefined
				? {}
				: { defaultTimeoutMs: options.defaultTimeoutMs }),
		})
		this.#files = new SandboxFileVerbs({
			transport: this.transport,
			rootDir: this.rootDir,
			lifetime: this.#lifetime,
			path: (method, parameter, path) => this.#path(method, parameter, path),
		})
		this.#sessions = new SandboxSessionVerbs({
			transport: this.transport,
			lifetime: this.#lifetime,
			optionalPath: (method, parameter, path) => this.#optionalPath(method, parameter, path),
		})
		this.#events = new eventLog.SandboxEventLog()
		options.transport.liveness.onDied((died) => eventLog.recordGuestDeath(this.#events, died))
		options.egressDecisions?.((decision) => eventLog.recordEgressDecision(this.#events, decision))
	}

	get status(): SandboxStatus {
		return this.#lifetime.status
	}

	/**
	 * How the guest agent ended, once its tier reported it dead (then `status` is `destroyed` and
	 * every call fails with `GuestDiedError`); undefined while it lives, and after a `destroy()`.
	 */
	get guestExit(): GuestExit | undefined {
		const died = this.transport.liveness.error
		if (died === undefined) return undefined
		return {
			exitCode: died.exitCode,
			signal: died.signal,
			...(died.oomKilled === undefined ? {} : { oomKilled: died.oomKilled }),
			...(died.sandboxId === undefined ? {} : { sandboxId: died.sandboxId }),
		}
	}

	/** What the retirement after an unconfirmable cancellation observed, once there was one. */
	get retirement(): Promise<SandboxRetirementObservation> | undefined {
		return this.#lifetime.retirement
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
		return this.#lifetime.run('exec', check, async (signal) => {
			const resolved = { ...options, signal, ...(cwd === undefined ? {} : { cwd }) }
			this.#execCount += 1
			return eventLog.recordedExec(this.#events, this.#execCount, command, args, () =>
				this.#lifetime.guard('exec', () =>
					isDetachable(options)
						? execDetachable(this.#detachableHost, command, args, resolved)
						: this.#controller.exec(command, args, resolved),
				),
			)
		})
	}

	/** Follows a detachable execution by id to its result; aborting `signal` only detaches. */
	attachExecution(
		executionId: string,
		options: AttachExecutionOptions = {},
	): Promise<SandboxExecResult> {
		const check = () => checkAttachExecution(executionId, options)
		return this.#lifetime.run('attachExecution', check, (signal) =>
			attachToExecution(this.#detachableHost, executionId, { ...options, signal }),
		)
	}

	/** Confirmed cancel by id from any process holding it; an unconfirmed one retires nothing. */
	cancelExecution(
		executionId: string,
		options: CancelExecutionOptions = {},
	): Promise<RemoteCancellationAcknowledgement> {
		const check = () => checkCancelExecution(executionId, options)
		return this.#lifetime.run('cancelExecution', check, (signal) =>
			cancelExecutionById(this.#detachableHost, executionId, signal),
		)
	}

	/** Background commands over detached executions (background-process.ts). */
	spawn(command: string, args: readonly string[] = [], options: SandboxSpawnOptions = {}) {
		return spawnIn(this.#backgroundHost, command, args, options)
	}

	/** An unknown id rejects the handle's `wait()`. */
	async attachProcess(id: string, options: SandboxAttachProcessOptions = {}) {
		return attachProcessIn(this.#backgroundHost, id, options)
	}

	get #backgroundHost(): BackgroundHost {
		return {
			transport: this.transport,
			lifetime: this.#lifetime,
			exec: (command, args, options) => this.exec(command, args, options),
			attachExecution: (id, options) => this.attachExecution(id, options),
			cancelExecution: (id, options) => this.cancelExecution(id, options),
		}
	}

	get #detachableHost(): DetachableExecutionHost {
		return detachableHostOf(this.transport, this.#controller)
	}

	writeFile(
		path: string,
		content: string | Uint8Array,
		options?: SandboxWriteFileOptions,
	): Promise<void> {
		return this.#files.writeFile(path, content, options)
	}
	/** The file's bytes, or the byte range asked for. */
	readFile(path: string, options?: SandboxReadFileOptions): Promise<Buffer> {
		return this.#files.readFile(path, options)
	}
	/** The file as a stream of chunks, without holding it whole. */
	readFileStream(path: string, options?: SandboxReadFileStreamOptions): AsyncIterable<Buffer> {
		return this.#files.readFileStream(path, options)
	}
	listFiles(path: string, options?: SandboxListFilesOptions): Promise<readonly SandboxFileEntry[]> {
		return this.#files.listFiles(path, options)
	}

	/** A bounded, lazy glob walk under `rootPath`, run inside the guest. */
	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry> {
		this.#lifetime.admit('walkFiles')
		const resolved = this.#path('walkFiles', 'rootPath', rootPath)
		const caller = checkWalkFiles(options)
		return this.#lifetime.track('walkFiles', caller, (signal) =>
			shownGuestWalk(
				this.rootDir,
				walkFilesViaExec(
					(command, args, execOptions) => this.exec(command, args, execOptions),
					resolved,
					{ ...options, signal },
				),
			),
		)
	}

	// ---- file verbs and watch (sandbox-file-verbs.ts) ----

	stat(path: string, options?: SandboxPathOptions): Promise<SandboxFileStat> {
		return this.#files.stat(path, options)
	}
	exists(path: string, options?: SandboxPathOptions): Promise<boolean> {
		return this.#files.exists(path, options)
	}
	remove(path: string, options?: SandboxRecursiveOptions): Promise<void> {
		return this.#files.remove(path, options)
	}
	mkdir(path: string, options?: SandboxRecursiveOptions): Promise<void> {
		return this.#files.mkdir(path, options)
	}
	rename(from: string, to: string, options?: SandboxPathOptions): Promise<void> {
		return this.#files.rename(from, to, options)
	}
	listDirectory(
		path: string,
		options?: SandboxListDirectoryOptions,
	): Promise<SandboxDirectoryPage> {
		return this.#files.listDirectory(path, options)
	}
	watch(path: string, options?: SandboxWatchOptions): AsyncIterable<SandboxWatchEvent> {
		return this.#files.watch(path, options)
	}

	/** The lifecycle stream (sandbox-event-log.ts); it ends after `destroyed` or `guest-died`. */
	events(options: SandboxEventsOptions = {}): AsyncIterable<SandboxLifecycleEvent> {
		return this.#events.events(options, () => this.#lifetime.admit('events'))
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
		return this.#lifetime.run('openTerminal', check, async (signal) => {
			if (isPersistentTerminalOptions(options)) {
				const resolved = { ...options, ...(cwd === undefined ? {} : { cwd }) }
				return this.#sessions.openPersistent(resolved, signal)
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
			return this.#lifetime.own(session, 'openTerminal', () => session.close())
		})
	}

	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection> {
		const check = () => checkOpenTcpConnection(options)
		return this.#lifetime.run('openTcpConnection', check, async (signal) => {
			const host = options.host ?? '127.0.0.1'
			const refusal = tcpTargetRefusal(host, options.port)
			if (refusal !== undefined) throw new SandboxTcpTargetRefusedError(host, options.port, refusal)
			const connection = await this.transport.openTcpConnection(
				{ host: host === '::1' ? '::1' : '127.0.0.1', port: options.port },
				signal,
			)
			return this.#lifetime.own(connection, 'openTcpConnection', () => connection.close())
		})
	}

	/** A guest port on the host's loopback, one `openTcpConnection` per client (port-exposure.ts). */
	exposePort(port: number, options: SandboxExposePortOptions = {}): Promise<SandboxExposedPort> {
		const check = () => checkExposePort(port, options)
		return this.#lifetime.run('exposePort', check, async (signal) => {
			const exposure = await PortExposure.open({
				...exposureSettings(port, options, signal),
				connect: (guestPort, connectSignal) =>
					this.openTcpConnection({ port: guestPort, signal: connectSignal }),
			})
			return this.#lifetime.own(exposure, 'exposePort', () => exposure.close())
		})
	}

	// ---- sessions (sandbox-session-verbs.ts): SessionsUnsupportedError before dialing an older guest ----

	/** A program with no PTY, stdin closed, in its own kernel session; it outlives this host. */
	startDetached(options: StartDetachedOptions): Promise<StartedSession> {
		return this.#sessions.startDetached(options)
	}
	/** Rejoins a session from any process: replay from `fromOffset`, then live; supersedes. */
	attachTerminal(sessionId: string, options?: AttachTerminalOptions): Promise<SessionTerminal> {
		return this.#sessions.attachTerminal(sessionId, options)
	}
	/** One read in the BackgroundJobOutput shape; not an attachment. */
	readSession(sessionId: string, options?: ReadSessionOptions): Promise<BackgroundJobOutput> {
		return this.#sessions.readSession(sessionId, options)
	}
	/** The guest's sessions. */
	listSessions(options?: ListSessionsOptions): Promise<SessionSummary[]> {
		return this.#sessions.listSessions(options)
	}
	/** Signals everything still in the session (default SIGKILL) and reports whether it ended. */
	killSession(sessionId: string, options?: KillSessionOptions): Promise<KilledSession> {
		return this.#sessions.killSession(sessionId, options)
	}

	/**
	 * Stops every process in the guest (agent-lifecycle-ops.ts) and leaves the agent serving; the
	 * report names the scope. `QuiesceUnsupportedError` before dialing an agent without the op,
	 * `QuiesceUnconfirmedError` (with the pid) when a process outlived SIGKILL.
	 */
	quiesce(options: QuiesceOptions = {}): Promise<QuiesceReport> {
		return this.#lifetime.run(
			'quiesce',
			() => checkQuiesce(options),
			(signal) => quiesceThroughAgent(this.transport, { ...options, signal }),
		)
	}

	/** `sync -f` of the guest's workspace filesystem; `FlushUnsupportedError`/`FlushUnconfirmedError`. */
	flush(options: FlushOptions = {}): Promise<FlushReport> {
		return this.#lifetime.run(
			'flush',
			() => checkFlush(options),
			(signal) => flushThroughAgent(this.transport, { ...options, signal }),
		)
	}

	/** Idempotent; concurrent calls share one teardown. A failed teardown may be retried. */
	destroy(options: SandboxDestroyOptions = {}): Promise<void> {
		let signal: AbortSignal | undefined
		try {
			signal = checkDestroyOptions(options)
		} catch (error) {
			return Promise.reject(error)
		}
		// Session terminals are detached only: the guest's sessions die with the unit `release` stops.
		const teardown = this.#lifetime.destroy(signal, async () => this.#sessions.closeAll())
		// Concurrent callers get the very promise the first one got, as they share its teardown.
		if (this.#destroyCall?.teardown !== teardown) {
			const done = teardown.then(() => this.#events.record({ type: 'destroyed' }, true))
			this.#destroyCall = { teardown, done }
		}
		return this.#destroyCall.done
	}

	/** `destroy()`, for `await using sandbox = await provider.create()`. */
	[Symbol.asyncDispose](): Promise<void> {
		return this.destroy()
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
}

/** Builds the agent-backed `Sandbox` every tier hands out. */
export function createAgentSandbox(options: AgentSandboxOptions): AgentSandbox {
	return new AgentSandbox(options)
}
