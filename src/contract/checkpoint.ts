/**
 * Checkpoints: a sandbox's state saved under an id, rolled back to, and forked from
 * (`provider.create({ from })`). A provider declares the kinds it takes in `checkpointKinds`; a kind
 * it does not take is refused by name (`CheckpointUnsupportedError`) before anything is done.
 */
import { SandboxError } from './errors.js'

/**
 * `filesystem`: the workspace's files (running processes are not kept); `memory`: the processes
 * too. Which a provider takes is its `checkpointKinds`.
 */
export type SandboxCheckpointKind = 'filesystem' | 'memory'

/** One saved state, as `checkpoint()` answers and `listCheckpoints()` lists it. */
export interface SandboxCheckpoint {
	/** Opaque; what `rollback`, `create({ from })` and `deleteCheckpoint` take. */
	readonly id: string
	readonly kind: SandboxCheckpointKind
	/** The sandbox it was taken of (which may since be destroyed). */
	readonly sandboxId: string
	/** Milliseconds since the epoch. */
	readonly createdAt: number
	/** What the checkpoint holds on the provider's storage. */
	readonly bytes: number
	readonly label: string | undefined
}

/** Options of `Sandbox.checkpoint`. */
export interface SandboxCheckpointOptions {
	/** Kept with the checkpoint, for a caller's own bookkeeping. */
	readonly label?: string
	/** Default `filesystem`; on a provider whose only kind is `memory` (the microVM tier), `memory`. */
	readonly kind?: SandboxCheckpointKind
	/** An abort leaves no checkpoint behind (and the sandbox running). */
	readonly signal?: AbortSignal
}

/** Options of `Sandbox.rollback`, `listCheckpoints` and `deleteCheckpoint`. */
export interface SandboxCheckpointCallOptions {
	readonly signal?: AbortSignal
}

/** What a restore hook is told: the checkpoint restored, and whether into a fork or a rollback. */
export interface SandboxRestoreContext {
	readonly checkpoint: SandboxCheckpoint
	readonly operation: 'fork' | 'rollback'
}

/**
 * Options of `Sandbox.rollback`. `onRestore` runs once the rolled-back sandbox is ready and before
 * `rollback` resolves (see `SandboxRestoreHook`); a throw rejects `CheckpointRestoreHookError` and
 * the sandbox stays, in the checkpoint's state. `S` is the sandbox type (`Sandbox`).
 */
export interface SandboxRollbackOptions<S> extends SandboxCheckpointCallOptions {
	/** Runs on the rolled-back sandbox before `rollback` resolves; a throw rejects the call. */
	readonly onRestore?: (sandbox: S, context: SandboxRestoreContext) => void | Promise<void>
}

/**
 * What a sandbox that takes checkpoints adds to the contract; `S` is what a rollback's `onRestore`
 * is handed (`Sandbox`).
 */
export interface SandboxCheckpointVerbs<S> {
	/**
	 * Saves the sandbox's state; consistent (the sandbox's processes are paused for the instant of
	 * the capture). `CheckpointUnsupportedError` when its provider does not take the kind.
	 */
	checkpoint?(options?: SandboxCheckpointOptions): Promise<SandboxCheckpoint>
	/**
	 * Makes the sandbox that state. With a `filesystem` checkpoint every process running in the
	 * sandbox is ended first (commands, sessions, detached executions), then the workspace is
	 * replaced by the checkpoint's; the sandbox itself (id, agent, network) stays. `onRestore` runs
	 * before it resolves.
	 */
	rollback?(
		checkpoint: SandboxCheckpoint | string,
		options?: SandboxRollbackOptions<S>,
	): Promise<void>
}

/** What a provider that keeps checkpoints adds to the contract. */
export interface SandboxCheckpointStore {
	/** The kinds this provider's sandboxes take; `[]`: none (then `create({ from })` is refused). */
	readonly checkpointKinds: readonly SandboxCheckpointKind[]
	/** Every checkpoint this provider keeps, oldest first, whichever process took it. */
	listCheckpoints?(options?: SandboxCheckpointCallOptions): Promise<SandboxCheckpoint[]>
	/** Removes the checkpoint and what it stores; `CheckpointNotFoundError` for an unknown id. */
	deleteCheckpoint?(id: string, options?: SandboxCheckpointCallOptions): Promise<void>
}

/**
 * A checkpoint its provider cannot take or use: a kind it does not declare in `checkpointKinds`,
 * or a sandbox whose workspace it cannot capture. Raised before anything is done.
 */
export class CheckpointUnsupportedError extends SandboxError<'checkpoint-unsupported'> {
	override readonly name = 'CheckpointUnsupportedError'
	/** The kind asked for. */
	readonly kind: SandboxCheckpointKind
	/** What the provider takes (its `checkpointKinds`). */
	readonly supported: readonly SandboxCheckpointKind[]
	/** `checkpoint`, `rollback` or `create` (a fork). */
	readonly operation: string

	constructor(
		operation: string,
		kind: SandboxCheckpointKind,
		supported: readonly SandboxCheckpointKind[],
		detail?: string,
	) {
		const takes =
			supported.length === 0
				? 'this provider takes no checkpoints'
				: `it takes ${supported.join(', ')}`
		super(
			`${operation}: a ${kind} checkpoint is not supported here (${detail ?? takes}); check the provider's checkpointKinds before asking`,
			'checkpoint-unsupported',
		)
		this.kind = kind
		this.supported = supported
		this.operation = operation
	}
}

/** No checkpoint of that id in the provider's store (never taken, or deleted). */
export class CheckpointNotFoundError extends SandboxError<'checkpoint-not-found'> {
	override readonly name = 'CheckpointNotFoundError'
	readonly checkpointId: string

	constructor(checkpointId: string) {
		super(
			`checkpoint ${checkpointId} does not exist in this provider's store; listCheckpoints() shows what does`,
			'checkpoint-not-found',
		)
		this.checkpointId = checkpointId
	}
}

/**
 * The caller's `onRestore` hook threw (or rejected), as `cause`. A fork (`operation: 'fork'`) was
 * destroyed before this was raised; after a rollback the sandbox stays, in the checkpoint's state.
 */
export class CheckpointRestoreHookError extends SandboxError<'restore-hook-failed'> {
	override readonly name = 'CheckpointRestoreHookError'
	readonly operation: 'fork' | 'rollback'
	readonly checkpointId: string
	/** The fork (destroyed) or the rolled-back sandbox (still live). */
	readonly sandboxId: string

	constructor(context: SandboxRestoreContext, sandboxId: string, cause: unknown) {
		const after =
			context.operation === 'fork'
				? `the fork ${sandboxId} was destroyed`
				: `sandbox ${sandboxId} stays rolled back`
		super(
			`onRestore threw after the ${context.operation} from checkpoint ${context.checkpoint.id} (${after}); see cause, fix the hook and try again`,
			'restore-hook-failed',
			{ cause },
		)
		this.operation = context.operation
		this.checkpointId = context.checkpoint.id
		this.sandboxId = sandboxId
	}
}

/**
 * The provider already keeps `limit` checkpoints (its `maxCheckpoints`): raised before any capture
 * work. Delete some (`deleteCheckpoint(id)`, or `namzu-sandbox checkpoint rm ID`) and try again.
 */
export class CheckpointLimitError extends SandboxError<'checkpoint-limit'> {
	override readonly name = 'CheckpointLimitError'
	readonly limit: number

	constructor(limit: number) {
		super(
			`this provider already keeps ${limit} checkpoints (its limit); delete some with deleteCheckpoint(id) or \`namzu-sandbox checkpoint rm ID\`, then checkpoint again`,
			'checkpoint-limit',
		)
		this.limit = limit
	}
}
