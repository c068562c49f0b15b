/**
 * One lifecycle stream per sandbox (`Sandbox.events`): what the host knows happened to it, in
 * order, each event with a `cursor` to resume after. The host keeps the last
 * `SANDBOX_EVENT_RETENTION` events; a cursor older than that resumes with an `overflow` event.
 */

/** Events each sandbox handle keeps for `events({ cursor })` to replay. */
export const SANDBOX_EVENT_RETENTION = 1024

interface EventBase {
	/** Epoch milliseconds at which the host learned it. */
	readonly at: number
	readonly cursor: string
}

/** An `exec` was admitted (its command and arguments as given). */
export interface SandboxExecStartedEvent extends EventBase {
	readonly type: 'exec-started'
	/** Numbers this handle's execs in start order; `exec-exited` repeats it. */
	readonly execId: number
	readonly command: string
	readonly args: readonly string[]
}

/** An `exec` ended: its exit as the result reports it (`error` when the call threw instead). */
export interface SandboxExecExitedEvent extends EventBase {
	readonly type: 'exec-exited'
	readonly execId: number
	readonly command: string
	readonly exitCode?: number
	readonly signal?: string
	readonly timedOut?: boolean
	readonly aborted?: boolean
	readonly durationMs?: number
	/** Present when the tier measured it (accounting); `oom` follows a true one. */
	readonly oomKilled?: boolean
	/** The `name` of the error the call threw, when it threw. */
	readonly error?: string
}

/** The kernel's OOM killer ended an exec's command, or the whole guest. */
export interface SandboxOomEvent extends EventBase {
	readonly type: 'oom'
	readonly scope: 'exec' | 'guest'
	readonly execId?: number
}

/** A decision of the sandbox's egress proxy (only on tiers and policies with one). */
export interface SandboxEgressDecisionEvent extends EventBase {
	readonly type: 'egress-decision'
	readonly host: string
	readonly port: number
	readonly verdict: 'allow' | 'deny'
	readonly layer: string
	readonly reason: string
}

/** The guest's agent ended on its own; every later call fails with `GuestDiedError`. */
export interface SandboxGuestDiedEvent extends EventBase {
	readonly type: 'guest-died'
	readonly exitCode: number | null
	readonly signal: string | null
	readonly oomKilled?: boolean
}

/** `destroy()` released the sandbox; the stream ends after this event. */
export interface SandboxDestroyedEvent extends EventBase {
	readonly type: 'destroyed'
}

/** Events were lost between the cursor given and the first event replayed. */
export interface SandboxEventsOverflowEvent extends EventBase {
	readonly type: 'overflow'
}

/** What `Sandbox.events` yields, in the order the host learned it. */
export type SandboxLifecycleEvent =
	| SandboxExecStartedEvent
	| SandboxExecExitedEvent
	| SandboxOomEvent
	| SandboxEgressDecisionEvent
	| SandboxGuestDiedEvent
	| SandboxDestroyedEvent
	| SandboxEventsOverflowEvent

/** Options of `Sandbox.events`. */
export interface SandboxEventsOptions {
	/** Ends the iteration. */
	readonly signal?: AbortSignal
	/** Resume after this event's `cursor`; without it, only events from now on. */
	readonly cursor?: string
	/** Start with every retained event (ignored when `cursor` is given). Default false. */
	readonly replay?: boolean
}
