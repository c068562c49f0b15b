/**
 * `LocalSandbox`: what the local tier hands out — the portable `Sandbox` plus the verbs the agent
 * serves beyond it (sessions, reattachable executions, quiesce/flush), under the names the
 * Kubernetes workspace will share. It is the host's one `AgentSandbox`, typed by the members that
 * are public on this tier.
 */
import type { Sandbox } from '../../contract/sandbox.js'
import type { AgentSandbox } from '../../host/sandbox/agent-sandbox.js'

/** Members beyond the portable contract that the local tier exposes. */
export type LocalSandboxVerb =
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

/** A local sandbox: the `Sandbox` contract (no `setNetworkPolicy`) plus the local tier's own verbs. */
export type LocalSandbox = Pick<
	AgentSandbox,
	Exclude<keyof Sandbox, 'setNetworkPolicy'> | LocalSandboxVerb
>
