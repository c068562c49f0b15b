/**
 * `MachineSandbox`: what every tier that runs its guest as processes on this host hands out (the
 * local tier's `LocalSandbox`, the container tier's `ContainerSandbox`) — the portable `Sandbox`
 * plus the verbs the agent serves beyond it (sessions, reattachable executions, quiesce/flush),
 * under the names the Kubernetes workspace will share. It is the host's one `AgentSandbox`, typed
 * by the members that are public on these tiers.
 */
import type { SandboxCheckpointVerbs } from '../../contract/checkpoint.js'
import type { Sandbox } from '../../contract/sandbox.js'
import type { AgentSandbox } from '../../host/sandbox/agent-sandbox.js'

/** Members beyond the portable contract that the tiers on this machine expose. */
export type MachineSandboxVerb =
	| 'retirement'
	// How the agent ended once it died under the sandbox (`GuestDiedError`).
	| 'guestExit'
	// Sessions: `openTerminal({ …, sessionId, persistent: true })` too.
	| 'startDetached'
	| 'attachTerminal'
	| 'readSession'
	| 'listSessions'
	| 'killSession'
	// Reattachable executions: `exec(…, { executionId, detach, detachSignal })` too.
	| 'attachExecution'
	| 'cancelExecution'
	// Lifecycle.
	| 'quiesce'
	| 'flush'

/**
 * A sandbox on this machine: the `Sandbox` contract (no `setNetworkPolicy`) plus its own verbs;
 * `checkpoint` / `rollback` always (they refuse by name where its provider takes no checkpoints).
 */
export type MachineSandbox = Pick<
	AgentSandbox,
	| Exclude<keyof Sandbox, 'setNetworkPolicy' | keyof SandboxCheckpointVerbs<Sandbox>>
	| MachineSandboxVerb
> &
	Required<SandboxCheckpointVerbs<Sandbox>>
