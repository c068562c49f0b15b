/**
 * Refusals of a sandbox's default bounds and of `diskLimitMb`: a sandbox is never silently
 * unbounded, and a disk limit is never accepted and ignored.
 */
import { SandboxError, type SandboxErrorOptions } from '../../../contract/errors.js'

/**
 * The bounds every sandbox gets by default (memory, tasks, CPU share) cannot be enforced on this
 * host — typically a non-root host user without a delegated cgroup. Limits the caller asked for
 * explicitly refuse with `CgroupLimitsUnavailableError` instead.
 */
export class DefaultLimitsUnavailableError extends SandboxError<'default-limits-unavailable'> {
	override readonly name = 'DefaultLimitsUnavailableError'
	/** The controllers the defaults needed (`memory`, `pids`, `cpu`). */
	readonly controllers: readonly string[]

	constructor(controllers: readonly string[], detail: string, options: SandboxErrorOptions = {}) {
		super(
			`cannot enforce the default sandbox limits (${controllers.join(', ')}): ${detail}. Run the host as root, or inside a delegated cgroup (e.g. \`systemd-run --user --scope -p Delegate=yes <command>\`), or accept unbounded sandboxes explicitly with backend.defaultLimits: 'best-effort'`,
			'default-limits-unavailable',
			options,
		)
		this.controllers = controllers
	}
}

/** Why `diskLimitMb` cannot be enforced for this sandbox. */
export type DiskLimitRefusal = 'caller-workspace' | 'not-root' | 'mkfs-missing' | 'setup-failed'

/** `diskLimitMb` was asked for where it cannot be enforced; nothing was created. */
export class DiskLimitUnavailableError extends SandboxError<'disk-limit-unavailable'> {
	override readonly name = 'DiskLimitUnavailableError'
	readonly refusal: DiskLimitRefusal
	readonly diskLimitMb: number

	constructor(
		refusal: DiskLimitRefusal,
		diskLimitMb: number,
		detail: string,
		options: SandboxErrorOptions = {},
	) {
		const why: Record<DiskLimitRefusal, string> = {
			'caller-workspace':
				'a caller-supplied workingDirectory cannot be size-limited (its filesystem is the caller’s); omit workingDirectory or diskLimitMb',
			'not-root':
				'a sized workspace is a loop-mounted filesystem, which needs a root host; omit diskLimitMb',
			'mkfs-missing': 'mkfs.ext4 is not usable (apt-get install -y e2fsprogs)',
			'setup-failed': 'setting up the sized workspace failed',
		}
		super(
			`diskLimitMb ${diskLimitMb} cannot be enforced: ${why[refusal]}${detail === '' ? '' : ` (${detail})`}`,
			'disk-limit-unavailable',
			options,
		)
		this.refusal = refusal
		this.diskLimitMb = diskLimitMb
	}
}

/** Which step of a checkpoint ran out of space. */
export type CheckpointSpaceOperation = 'checkpoint' | 'rollback' | 'fork'

/**
 * A checkpoint, rollback or fork ran out of space: the filesystem holding the checkpoints (the
 * copy-on-write volume, or the state directory's own) or a sized workspace (`diskLimitMb`) is
 * full. No partial checkpoint is left; a rollback's or fork's workspace holds what was copied.
 */
export class CheckpointSpaceExhaustedError extends SandboxError<'checkpoint-space-exhausted'> {
	override readonly name = 'CheckpointSpaceExhaustedError'
	readonly operation: CheckpointSpaceOperation
	/** The directory whose filesystem was full. */
	readonly location: string

	constructor(
		operation: CheckpointSpaceOperation,
		location: string,
		options: SandboxErrorOptions = {},
	) {
		super(
			`${operation} ran out of space on the filesystem of ${location}: delete checkpoints no longer needed (provider.deleteCheckpoint), free space on the host, or raise diskLimitMb`,
			'checkpoint-space-exhausted',
			options,
		)
		this.operation = operation
		this.location = location
	}
}
