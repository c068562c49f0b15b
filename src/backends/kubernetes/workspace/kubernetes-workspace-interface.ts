/**
 * `KubernetesWorkspace`: what a workspace handle promises — the SDK `Sandbox` plus the verbs only a
 * workspace has. The handle that keeps it is kubernetes-workspace.ts.
 */
import type { BackgroundJobOutput } from '../../../contract/background-job-output.js'
import type {
	OpenTerminalOptions,
	Sandbox,
	SandboxExecResult,
	SandboxExposedPort,
	SandboxExposePortOptions,
	SandboxFileEntry,
	SandboxReadFileStreamOptions,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	SandboxWalkFilesOptions,
	TerminalSession,
} from '../../../contract/sandbox.js'
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
import type { KubernetesWorkspaceIdentity } from './guest-identity.js'
import type { KubernetesGuestRestartListener } from './guest-restart-events.js'
import type {
	KubernetesWorkspaceDestroyOptions,
	KubernetesWorkspaceRefreshOptions,
	KubernetesWorkspaceResumeOptions,
	KubernetesWorkspaceSuspendOptions,
} from './workspace-options.js'
import type { KubernetesWorkspaceOrigin } from './workspace-start.js'

/** The SDK `Sandbox` plus the verbs only a workspace has. */
export interface KubernetesWorkspace extends Sandbox {
	/** What the creating call walked into; never changes. */
	readonly origin: KubernetesWorkspaceOrigin
	/** True between a suspend and a resume (the resumable state); false while running or deleted. */
	readonly suspended: boolean
	/**
	 * The `sandbox.namzu.ai/pod-template-hash` the object carries: the revision of the template it
	 * was built (or last refreshed) from. `undefined` for a workspace created before the annotation.
	 */
	readonly templateRevision: string | undefined
	/** `templateRevision` equals the template as this handle last read it (never true when unknown). */
	readonly templateCurrent: boolean
	/**
	 * Re-reads the `Sandbox`: a workspace another process suspended then reports `suspended: true`
	 * (unconfirmed — `suspend()` still patches and waits; `resume()` wakes it on the same disk).
	 */
	refresh(options?: KubernetesWorkspaceRefreshOptions): Promise<void>
	/** Reaps this handle's terminals, flushes (default), quiesces (if asked), patches `Suspended`. */
	suspend(options?: KubernetesWorkspaceSuspendOptions): Promise<void>
	/**
	 * Wakes the workspace (no patch when another process already did) and binds the new pod;
	 * `refreshPodTemplate` writes the current template's pod template in the same request.
	 */
	resume(options?: KubernetesWorkspaceResumeOptions): Promise<void>
	/** No options, or `deleteDisk: false`: a suspend. `deleteDisk: true`: DELETE, disk and all. */
	destroy(options?: KubernetesWorkspaceDestroyOptions): Promise<void>
	/** `sync -f` of the guest's workspace filesystem, outside a suspend. */
	flush(options?: FlushOptions): Promise<FlushReport>
	/** Stops every process in the guest and leaves the agent serving. */
	quiesce(options?: QuiesceOptions): Promise<QuiesceReport>
	readFileStream(path: string, options?: SandboxReadFileStreamOptions): AsyncIterable<Buffer>
	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry>
	openTerminal(options: PersistentTerminalOptions): Promise<SessionTerminal>
	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession>
	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection>
	/** A guest port on this host's loopback; a suspend or destroy closes it. */
	exposePort(port: number, options?: SandboxExposePortOptions): Promise<SandboxExposedPort>
	/** `executionId`/`detach`: a command that survives a lost connection (reattached by id). */
	exec(
		command: string,
		args?: readonly string[],
		options?: DetachableExecOptions,
	): Promise<SandboxExecResult>
	/** Follows a detachable execution by id from any process; aborting only detaches. */
	attachExecution(executionId: string, options?: AttachExecutionOptions): Promise<SandboxExecResult>
	/** The confirmed cancel by id; one it could not confirm rejects and retires nothing. */
	cancelExecution(
		executionId: string,
		options?: CancelExecutionOptions,
	): Promise<RemoteCancellationAcknowledgement>
	/** Rejoins a persistent terminal from any process, replaying from `fromOffset`. */
	attachTerminal(sessionId: string, options?: AttachTerminalOptions): Promise<SessionTerminal>
	/** Starts a program with no PTY in its own kernel session, kept by the guest under its name. */
	startDetached(options: StartDetachedOptions): Promise<StartedSession>
	/** A session's output from `fromOffset`; a read displaces nobody. */
	readSession(sessionId: string, options?: ReadSessionOptions): Promise<BackgroundJobOutput>
	/** The sessions the guest holds (its memory only: empty after a suspend/resume). */
	listSessions(options?: ListSessionsOptions): Promise<SessionSummary[]>
	/** Ends a session and everything still in it. */
	killSession(sessionId: string, options?: KillSessionOptions): Promise<KilledSession>
	/** The guest bound now: the Sandbox, its claims, the pod and the agent process. */
	readonly identity: KubernetesWorkspaceIdentity
	/**
	 * Told when the guest is not the one it was (`pod-replaced`, `container-restarted`); never
	 * across this handle's own `suspend()`/`resume()`. Returns the unsubscribe.
	 */
	onGuestRestart(listener: KubernetesGuestRestartListener): () => void
}
