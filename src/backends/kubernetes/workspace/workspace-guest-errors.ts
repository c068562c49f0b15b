/**
 * Refusals about a workspace's guest: the object under the workspace's name is not the one this
 * handle was bound to (`KubernetesWorkspaceReplacedError`), and a command whose cancellation could
 * not be confirmed while the guest it reserved on is demonstrably gone
 * (`KubernetesWorkspaceGuestGoneError`, still a `RemoteCancellationUnknownError`). Messages name
 * the object and what was observed, never a bind token.
 */
import { SandboxError } from '../../../contract/errors.js'
import { RemoteCancellationUnknownError } from '../../../host/refusals/refusal-errors.js'
import type { KubernetesGuestRef } from './guest-identity.js'
import type { KubernetesGuestRestartReason } from './guest-restart-events.js'

/**
 * A refused call re-read the `Sandbox` and found another object under the name (a different
 * uid) or none at all: its disk is not this workspace's, so the handle does not rebind.
 */
export class KubernetesWorkspaceReplacedError extends SandboxError<'workspace-replaced'> {
	override readonly name = 'KubernetesWorkspaceReplacedError'
	readonly sandboxName: string
	readonly operation: string
	/** The uid this handle was bound to. */
	readonly expectedSandboxUid: string
	/** The uid found under the name; absent when no `Sandbox` exists. */
	readonly observedSandboxUid?: string

	constructor(
		sandboxName: string,
		operation: string,
		expectedSandboxUid: string,
		observedSandboxUid: string | undefined,
		options: { cause?: unknown } = {},
	) {
		const observed =
			observedSandboxUid === undefined
				? 'no Sandbox exists under that name'
				: `the Sandbox under that name is another object (uid ${observedSandboxUid})`
		super(
			`${operation}() on workspace ${sandboxName} (Sandbox uid ${expectedSandboxUid}) refused: ${observed}; its disk is not this workspace's, so the handle does not follow it`,
			'workspace-replaced',
			{ cause: options.cause },
		)
		this.sandboxName = sandboxName
		this.operation = operation
		this.expectedSandboxUid = expectedSandboxUid
		if (observedSandboxUid !== undefined) this.observedSandboxUid = observedSandboxUid
	}
}

/**
 * The command's cancellation could not be confirmed and the guest it reserved on is gone: the
 * pod was replaced, or the agent process in it changed. Whether the command ran is still unknown
 * (it may have run to any point before the guest went); never retry it automatically.
 */
export class KubernetesWorkspaceGuestGoneError extends RemoteCancellationUnknownError {
	override readonly name = 'KubernetesWorkspaceGuestGoneError'
	readonly change: KubernetesGuestRestartReason
	/** The guest the command reserved on. */
	readonly previous: KubernetesGuestRef
	/** The guest serving the workspace now. */
	readonly current: KubernetesGuestRef

	constructor(
		error: RemoteCancellationUnknownError,
		change: KubernetesGuestRestartReason,
		previous: KubernetesGuestRef,
		current: KubernetesGuestRef,
	) {
		const what =
			change === 'pod-replaced'
				? `its pod ${previous.podUid} was replaced by ${current.podUid}`
				: `the agent process in pod ${current.podUid} restarted`
		super(
			error.executionId,
			`the cancellation could not be confirmed and the guest it reserved on is gone (${what})`,
			{
				cause: error,
				...(error.guestCode === undefined ? {} : { guestCode: error.guestCode }),
			},
		)
		if (error.retirement) this.retirement = error.retirement
		this.change = change
		this.previous = previous
		this.current = current
	}
}
