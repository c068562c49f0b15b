/**
 * The Kubernetes workspace handle: the SDK `Sandbox` over ONE session at a time
 * (workspace-session.ts), every data-plane verb admitted and translated by ONE gate (`#call`),
 * and `suspend`/`resume`/`destroy` run through the one state machine (workspace-transitions.ts).
 * A suspend reaps the terminals and tcp connections this handle returned, flushes the guest (by
 * default) and quiesces it (when asked) — a guest that answered but could not confirm either
 * stops the suspend with no patch — then patches `Suspended` and waits for the pod to stop. Only
 * `destroy({ deleteDisk: true })` DELETEs. There is no lease: nothing reaps a workspace. A holder
 * epoch (the handle keeps the one it was opened or last resumed with) is checked before a suspend
 * reaps anything or a DELETE tears the session down, and fences the write itself (fenced-write.ts).
 */
import '../../../contract/async-dispose.js'
import type { BackgroundJobOutput } from '../../../contract/background-job-output.js'
import type {
	OpenTerminalOptions,
	SandboxEnvironment,
	SandboxExecResult,
	SandboxExposedPort,
	SandboxExposePortOptions,
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
} from '../../../contract/sandbox.js'
import type {
	SandboxEventsOptions,
	SandboxLifecycleEvent,
} from '../../../contract/sandbox-events.js'
import type {
	AttachExecutionOptions,
	CancelExecutionOptions,
	DetachableExecOptions,
} from '../../../host/exec/detachable-exec-options.js'
import type { RemoteCancellationAcknowledgement } from '../../../host/exec/remote-execution-messages.js'
import type {
	FlushOptions,
	FlushReport,
	QuiesceOptions,
	QuiesceReport,
} from '../../../host/lifecycle/agent-lifecycle-ops.js'
import type { SessionTerminal } from '../../../host/sessions/agent-session-terminal.js'
import type {
	AttachTerminalOptions,
	KillSessionOptions,
	ListSessionsOptions,
	PersistentTerminalOptions,
	ReadSessionOptions,
	StartDetachedOptions,
} from '../../../host/sessions/agent-sessions.js'
import type {
	KilledSession,
	SessionSummary,
	StartedSession,
} from '../../../host/sessions/session-summary.js'
import { isUnauthorizedRefusal, kubernetesCallError } from '../guest-call-errors.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import { KubernetesSandboxDestroyedError } from '../kubernetes-sandbox-errors.js'
import type { DialTracker } from '../pod-rebind.js'
import { isUnansweredFailure, readsSuspended } from './foreign-suspension.js'
import type { KubernetesWorkspaceIdentity } from './guest-identity.js'
import type { KubernetesGuestRestartListener } from './guest-restart-events.js'
import type { KubernetesWorkspace } from './kubernetes-workspace-interface.js'
import { OwnedResources } from './owned-resources.js'
import { KubernetesWorkspaceSuspendedError } from './workspace-errors.js'
import { WorkspaceEvents } from './workspace-events.js'
import {
	deleteFlight,
	type FlightContext,
	fenceOf,
	type HandleBinding,
	observe,
	resumeFlight,
	suspendFlight,
	type WorkspaceHandleOptions,
} from './workspace-flights.js'
import { isKeptUnconfirmedCancellation, WorkspaceGuest } from './workspace-guest.js'
import { operatingModeOf } from './workspace-mode-patch.js'
import {
	type CheckedTransition,
	checkTransitionOptions,
	type KubernetesWorkspaceDestroyOptions,
	type KubernetesWorkspaceRefreshOptions,
	type KubernetesWorkspaceResumeOptions,
	type KubernetesWorkspaceSuspendOptions,
} from './workspace-options.js'
import { openWorkspaceSession, type WorkspaceSession } from './workspace-session.js'
import type { KubernetesWorkspaceOrigin } from './workspace-start.js'
import { transitionRefusalError } from './workspace-transition-errors.js'
import {
	TransitionRefusal,
	type TransitionRequest,
	WorkspaceTransitions,
} from './workspace-transitions.js'

export type { WorkspaceHandleOptions } from './workspace-flights.js'

export class KubernetesWorkspaceHandle implements KubernetesWorkspace {
	readonly id: string
	readonly rootDir: string
	readonly environment: SandboxEnvironment = 'linux-namespace'
	readonly origin: KubernetesWorkspaceOrigin
	readonly #options: WorkspaceHandleOptions
	readonly #transitions = new WorkspaceTransitions('running')
	readonly #owned = new OwnedResources()
	readonly #events = new WorkspaceEvents()
	/** Identity, restart events, the refused-call re-read and the cancellation diagnosis. */
	readonly #guest: WorkspaceGuest
	readonly #b: HandleBinding

	constructor(options: WorkspaceHandleOptions) {
		const { session } = options.started
		this.#options = options
		this.id = session.sandboxName
		this.rootDir = options.rootDir
		this.origin = options.started.origin
		this.#b = {
			session,
			retiredUid: undefined,
			lastPodUid: session.podUid,
			epoch: options.options.epoch,
			templateRevision: undefined,
			templateHash: undefined,
		}
		observe(this.#b, options.started)
		this.#guest = new WorkspaceGuest({
			api: options.api,
			config: options.config,
			sandboxName: session.sandboxName,
			openSession: (binding) => openWorkspaceSession(binding, options.start.session),
			...(options.options.onCancellationUnconfirmed
				? { onCancellationUnconfirmed: options.options.onCancellationUnconfirmed }
				: {}),
		})
		this.#guest.bound(session, 'own-resume')
	}

	get templateRevision(): string | undefined {
		return this.#b.templateRevision
	}

	get templateCurrent(): boolean {
		return (
			this.#b.templateRevision !== undefined && this.#b.templateRevision === this.#b.templateHash
		)
	}

	get identity(): KubernetesWorkspaceIdentity {
		return this.#guest.identity()
	}

	onGuestRestart(listener: KubernetesGuestRestartListener): () => void {
		return this.#guest.onGuestRestart(listener)
	}

	get status(): SandboxStatus {
		const session = this.#b.session
		if (!session || !this.#transitions.admitting) return 'destroyed'
		return session.inner.status
	}

	get suspended(): boolean {
		const state = this.#transitions.state
		return state === 'suspended' || state === 'detached'
	}

	// ---- data plane: every verb through #call ----

	exec(
		command: string,
		args: readonly string[] = [],
		options: DetachableExecOptions = {},
	): Promise<SandboxExecResult> {
		return this.#call('exec', (session) => this.#events.exec(session.inner, command, args, options))
	}

	/** Execs and the delete (workspace-events.ts), across every suspend and resume. */
	events(options: SandboxEventsOptions = {}): AsyncIterable<SandboxLifecycleEvent> {
		return this.#events.read(options)
	}

	attachExecution(
		executionId: string,
		options: AttachExecutionOptions = {},
	): Promise<SandboxExecResult> {
		return this.#call('attachExecution', (session) =>
			session.inner.attachExecution(executionId, options),
		)
	}

	cancelExecution(
		executionId: string,
		options: CancelExecutionOptions = {},
	): Promise<RemoteCancellationAcknowledgement> {
		return this.#call('cancelExecution', (session) =>
			session.inner.cancelExecution(executionId, options),
		)
	}

	attachTerminal(sessionId: string, options: AttachTerminalOptions = {}): Promise<SessionTerminal> {
		return this.#call('attachTerminal', async (session) =>
			this.#owned.own(await session.inner.attachTerminal(sessionId, options)),
		)
	}

	startDetached(options: StartDetachedOptions): Promise<StartedSession> {
		return this.#call('startDetached', (session) => session.inner.startDetached(options))
	}

	readSession(sessionId: string, options: ReadSessionOptions = {}): Promise<BackgroundJobOutput> {
		return this.#call('readSession', (session) => session.inner.readSession(sessionId, options))
	}

	listSessions(options: ListSessionsOptions = {}): Promise<SessionSummary[]> {
		return this.#call('listSessions', (session) => session.inner.listSessions(options))
	}

	killSession(sessionId: string, options: KillSessionOptions = {}): Promise<KilledSession> {
		return this.#call('killSession', (session) => session.inner.killSession(sessionId, options))
	}

	writeFile(
		path: string,
		content: string | Uint8Array,
		options: SandboxWriteFileOptions = {},
	): Promise<void> {
		return this.#call('writeFile', (session) => session.inner.writeFile(path, content, options))
	}

	readFile(path: string, options: SandboxReadFileOptions = {}): Promise<Buffer> {
		return this.#call('readFile', (session) => session.inner.readFile(path, options))
	}

	readFileStream(path: string, options: SandboxReadFileStreamOptions = {}): AsyncIterable<Buffer> {
		return this.#stream('readFileStream', (session) => session.inner.readFileStream(path, options))
	}

	listFiles(
		rootPath: string,
		options: SandboxListFilesOptions = {},
	): Promise<readonly SandboxFileEntry[]> {
		return this.#call('listFiles', (session) => session.inner.listFiles(rootPath, options))
	}

	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry> {
		return this.#stream('walkFiles', (session) => session.inner.walkFiles(rootPath, options))
	}

	openTerminal(options: PersistentTerminalOptions): Promise<SessionTerminal>
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession>
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession> {
		return this.#call('openTerminal', async (session) =>
			this.#owned.own(await session.inner.openTerminal(options)),
		)
	}

	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection> {
		return this.#call('openTcpConnection', async (session) =>
			this.#owned.own(await session.inner.openTcpConnection(options)),
		)
	}

	/** Served by this host; the session's sandbox owns it, so a suspend closes it. */
	exposePort(port: number, options?: SandboxExposePortOptions): Promise<SandboxExposedPort> {
		return this.#call('exposePort', (session) => session.inner.exposePort(port, options))
	}

	flush(options: FlushOptions = {}): Promise<FlushReport> {
		return this.#call('flush', (session) => session.inner.flush(options))
	}

	quiesce(options: QuiesceOptions = {}): Promise<QuiesceReport> {
		return this.#call('quiesce', (session) => session.inner.quiesce(options))
	}

	/**
	 * The gate: refuses without dialing unless a session is bound and no transition is in flight,
	 * runs `call` on the current session, and maps the failure to this tier's named errors. A call
	 * admitted before a suspend began runs on; if it fails, it fails as itself.
	 */
	async #call<T>(operation: string, call: (session: WorkspaceSession) => Promise<T>): Promise<T> {
		const session = this.#admit(operation)
		const dialsBefore = session.podRebind?.dials.snapshot()
		let retry: WorkspaceSession
		try {
			return this.#answered(session, await call(session))
		} catch (error) {
			retry = await this.#recover(operation, session, error, dialsBefore)
		}
		// The guest refused before dispatch and the pod was replaced: the call is sent once more.
		try {
			return this.#answered(retry, await call(retry))
		} catch (error) {
			throw await this.#settle(operation, retry, error)
		}
	}

	#answered<T>(session: WorkspaceSession, value: T): T {
		this.#guest.answered(session)
		return value
	}

	/**
	 * A failed call: the session to send it to once more (a replaced pod of the same object the
	 * guest refused the token of), or the error it rejects with. A re-read showing the workspace
	 * suspended by another process is adopted: the handle reads `suspended` and `resume()` works.
	 */
	async #recover(
		operation: string,
		session: WorkspaceSession,
		error: unknown,
		dialsBefore: ReturnType<DialTracker['snapshot']> | undefined,
	): Promise<WorkspaceSession> {
		const recovery = await this.#guest.afterRefusal(
			operation,
			session,
			this.#b.session,
			error,
			dialsBefore,
		)
		switch (recovery.kind) {
			case 'retry':
				if (this.#b.session !== session && this.#b.session !== recovery.session) break
				if (!this.#transitions.admitting) break
				this.#b.session = recovery.session
				this.#b.lastPodUid = recovery.session.podUid
				return recovery.session
			case 'replaced':
				throw recovery.error
			case 'suspended':
				throw this.#foreignSuspension(operation, session, error)
			case 'none':
				break
		}
		const translated = await this.#settle(operation, session, error)
		// A failure the guest did not answer, on a handle that believes it runs: one re-read (an
		// `unauthorized` refusal already had its re-read in the recovery above).
		if (
			this.#b.session === session &&
			this.#transitions.admitting &&
			isUnansweredFailure(error) &&
			!isUnauthorizedRefusal(error) &&
			(await readsSuspended(this.#options.api, this.#options.config.namespace, this.id))
		) {
			throw this.#foreignSuspension(operation, session, translated)
		}
		throw translated
	}

	/** Another process suspended the workspace: adopted as unconfirmed (a suspend still patches). */
	#foreignSuspension(operation: string, session: WorkspaceSession, cause: unknown): Error {
		if (this.#b.session === session && this.#transitions.adoptSuspension()) {
			this.#b.session = undefined
			this.#b.retiredUid = session.podUid
		}
		return new KubernetesWorkspaceSuspendedError(this.id, operation, {
			noticedBy: 'transport',
			cause,
		})
	}

	/**
	 * Re-reads the `Sandbox`: a workspace another process suspended is recorded as such
	 * (unconfirmed — this handle's `suspend()` still patches and waits), and the template revision
	 * is read again. Sends no write and dials nothing.
	 */
	async refresh(options: KubernetesWorkspaceRefreshOptions = {}): Promise<void> {
		const { signal } = checkTransitionOptions('refresh', options)
		const read = await this.#options.api.get(
			kubernetesPaths.sandbox(this.#options.config.namespace, this.id),
			signal ? { signal } : {},
		)
		observe(this.#b, { sandbox: read })
		const session = this.#b.session
		if (operatingModeOf(read) === 'Suspended' && session && this.#transitions.adoptSuspension()) {
			this.#b.session = undefined
			this.#b.retiredUid = session.podUid
		}
	}

	/** The error a failed call rejects with: a kept unconfirmed cancellation is diagnosed first. */
	async #settle(operation: string, session: WorkspaceSession, error: unknown): Promise<unknown> {
		if (isKeptUnconfirmedCancellation(error)) return this.#guest.diagnose(session, error)
		return this.#translate(operation, session, error)
	}

	/** An iterable verb: admitted through the gate at its first step, its failures translated. */
	async *#stream<T>(
		operation: string,
		open: (session: WorkspaceSession) => AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		const [session, source] = await this.#call(
			operation,
			async (current) => [current, open(current)] as const,
		)
		try {
			yield* source
		} catch (error) {
			throw await this.#settle(operation, session, error)
		}
	}

	#admit(operation: string): WorkspaceSession {
		const session = this.#b.session
		if (this.#transitions.state === 'deleted')
			throw new KubernetesSandboxDestroyedError(this.id, operation)
		if (!session || !this.#transitions.admitting) {
			throw new KubernetesWorkspaceSuspendedError(this.id, operation)
		}
		return session
	}

	#translate(operation: string, session: WorkspaceSession, error: unknown): unknown {
		return kubernetesCallError(error, {
			sandboxId: this.id,
			operation,
			tier: 'workspace',
			addressMode: this.#options.config.agentAddress,
			host: session.host,
		})
	}

	// ---- transitions: all through the one state machine ----

	suspend(options: KubernetesWorkspaceSuspendOptions = {}): Promise<void> {
		return this.#transition('suspend', options, (checked) => ({
			verb: 'suspend',
			explicit: true,
			flush: checked.steps.flush !== undefined,
			quiesce: checked.steps.quiesce !== undefined,
		}))
	}

	resume(options: KubernetesWorkspaceResumeOptions = {}): Promise<void> {
		return this.#transition('resume', options, (checked) => ({
			verb: 'resume',
			writesEpoch: checked.epoch !== undefined,
		}))
	}

	/** `destroy()` (suspend, disk kept), for `await using`. */
	[Symbol.asyncDispose](): Promise<void> {
		return this.destroy()
	}

	destroy(options: KubernetesWorkspaceDestroyOptions = {}): Promise<void> {
		return this.#transition('destroy', options, (checked) =>
			checked.deleteDisk
				? { verb: 'delete' }
				: {
						verb: 'suspend',
						explicit: false,
						flush: checked.steps.flush !== undefined,
						quiesce: checked.steps.quiesce !== undefined,
					},
		)
	}

	get #flight(): FlightContext {
		return {
			id: this.id,
			handle: this.#options,
			binding: this.#b,
			owned: this.#owned,
			guest: this.#guest,
			state: () => this.#transitions.state,
		}
	}

	async #transition(
		method: 'suspend' | 'resume' | 'destroy',
		options: unknown,
		toRequest: (checked: CheckedTransition) => TransitionRequest,
	): Promise<void> {
		const checked = checkTransitionOptions(method, options)
		const epoch = checked.epoch ?? this.#b.epoch
		const request: TransitionRequest = {
			...toRequest(checked),
			...(epoch === undefined ? {} : { epoch }),
		}
		try {
			await this.#transitions.run(request, checked.signal, (signal) => {
				const flight = this.#flight
				const fence = fenceOf(flight, request, epoch)
				if (request.verb === 'suspend') return suspendFlight(flight, checked.steps, fence, signal)
				if (request.verb === 'delete') return deleteFlight(flight, fence, signal)
				return resumeFlight(flight, checked, fence, signal)
			})
			if (this.#transitions.state === 'deleted') this.#events.deleted()
		} catch (error) {
			if (!(error instanceof TransitionRefusal)) throw error
			throw transitionRefusalError(this.id, method, error.refusal)
		}
	}
}
