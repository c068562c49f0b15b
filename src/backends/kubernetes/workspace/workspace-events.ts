/**
 * A workspace handle's lifecycle stream (`events()`): a `SandboxEventLog` of the handle's own (the
 * one engine, host/sandbox/sandbox-event-log.ts), since the handle outlives each pod's session and
 * each session's `AgentSandbox` keeps a log that ends with it. It records the execs the handle
 * ran (never the privilege probe a start runs on a session) and `destroyed` once a delete landed;
 * a suspend or resume is no event (the contract names none) and the stream goes on across them.
 */
import type { SandboxExecResult } from '../../../contract/sandbox.js'
import type {
	SandboxEventsOptions,
	SandboxLifecycleEvent,
} from '../../../contract/sandbox-events.js'
import type { DetachableExecOptions } from '../../../host/exec/detachable-exec-options.js'
import type { AgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import { recordedExec, SandboxEventLog } from '../../../host/sandbox/sandbox-event-log.js'

export class WorkspaceEvents {
	readonly #log = new SandboxEventLog()
	#execs = 0

	/** Runs one exec of the handle on `inner` with its `exec-started` and `exec-exited` recorded. */
	exec(
		inner: AgentSandbox,
		command: string,
		args: readonly string[],
		options: DetachableExecOptions,
	): Promise<SandboxExecResult> {
		this.#execs += 1
		return recordedExec(this.#log, this.#execs, command, args, () =>
			inner.exec(command, args, options),
		)
	}

	/** The object is deleted: the stream ends. */
	deleted(): void {
		this.#log.record({ type: 'destroyed' }, true)
	}

	/** Never refused: suspended, the stream goes on; deleted, it has ended and reads back. */
	read(options: SandboxEventsOptions): AsyncIterable<SandboxLifecycleEvent> {
		return this.#log.events(options, () => undefined)
	}
}
