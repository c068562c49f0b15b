import type {
	SandboxCheckpoint,
	SandboxCheckpointStore,
	SandboxRestoreContext,
} from './checkpoint.js'
import type { EgressPolicy } from './egress.js'
import type { Sandbox, SandboxEnvironment } from './sandbox.js'

/** Whether a provider makes fresh workspaces, uses a caller's directory, or both. */
export type SandboxWorkspaceMode = 'ephemeral' | 'working-directory'

/**
 * Run once a restored sandbox is ready (its agent reachable) and before `create({ from })` or
 * `rollback` resolves: the place to give a fork its own identity (new keys, a new seed, a
 * re-registration) before anyone else uses it. A throw fails the call with
 * `CheckpointRestoreHookError` (the throw as its `cause`): a fork is destroyed first; a rolled-back
 * sandbox stays.
 */
export type SandboxRestoreHook = (
	sandbox: Sandbox,
	context: SandboxRestoreContext,
) => void | Promise<void>

/** Per-sandbox settings; each overrides the provider's default of the same name. */
export interface SandboxCreateConfig {
	/** Withdraws the authority to publish the allocation: nothing is left behind. */
	readonly signal?: AbortSignal
	/**
	 * A host directory to use as the workspace (read-write). The caller owns it: `destroy()` never
	 * removes it. Without it, a fresh directory is made and removed on `destroy()`.
	 */
	readonly workingDirectory?: string
	readonly env?: Readonly<Record<string, string>>
	/** Default `exec` timeout for this sandbox. */
	readonly timeoutMs?: number
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly egress?: EgressPolicy
	/**
	 * A fork: the new sandbox's workspace starts as the checkpoint's (a new id, agent, uid and cgroups;
	 * no byte shared with the parent or other forks). Refused by name (`CheckpointUnsupportedError`)
	 * by a provider whose `checkpointKinds` lacks the checkpoint's kind.
	 */
	readonly from?: SandboxCheckpoint | string
	/** With `from`: run on the fork before `create` resolves (see `SandboxRestoreHook`). */
	readonly onRestore?: SandboxRestoreHook
}

/** Makes sandboxes of one tier, and tears down what it still holds; keeps their checkpoints. */
export interface SandboxProvider extends SandboxCheckpointStore {
	readonly id: string
	readonly name: string
	readonly environment: SandboxEnvironment
	readonly workspaceModes: readonly SandboxWorkspaceMode[]
	/** A new, ready sandbox; a refused config starts nothing. */
	create(config?: SandboxCreateConfig): Promise<Sandbox>
	/** Tears down everything the provider still holds (its warm pool included). Idempotent. */
	close(): Promise<void>
	/** `close()`, for `await using`. */
	[Symbol.asyncDispose](): Promise<void>
}
