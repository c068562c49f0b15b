/**
 * The caller's `onRestore` on a restored sandbox: the one place every fork and rollback path runs
 * it (filesystem forks and rollbacks here, memory restores of the runsc and microVM paths). A throw
 * becomes `CheckpointRestoreHookError`; a fork is destroyed before that is raised, so a failed fork
 * leaves nothing behind, while a rolled-back sandbox stays.
 */
import { raceSignal } from '../../../common/bounded-promise.js'
import {
	CheckpointRestoreHookError,
	type SandboxRestoreContext,
} from '../../../contract/checkpoint.js'

/** What the hook runner needs of the restored sandbox. */
export interface RestoredSandbox {
	readonly id: string
	destroy(): Promise<void>
}

/**
 * Runs `hook` on `sandbox` (nothing without one). A throw, or the signal's abort while it runs:
 * a fork is destroyed first (a failed destroy is raised instead, since the fork then still
 * exists); then `CheckpointRestoreHookError` with the throw as `cause`, or the abort's reason.
 */
export async function runRestoreHook<S extends RestoredSandbox>(
	hook: ((sandbox: S, context: SandboxRestoreContext) => void | Promise<void>) | undefined,
	sandbox: S,
	context: SandboxRestoreContext,
	signal?: AbortSignal,
): Promise<void> {
	if (hook === undefined) return
	try {
		// A hook that throws synchronously is a rejection like any other.
		await raceSignal(
			Promise.resolve().then(() => hook(sandbox, context)),
			signal,
		)
	} catch (error) {
		if (context.operation === 'fork') await sandbox.destroy()
		if (signal?.aborted && error === signal.reason) throw error
		throw new CheckpointRestoreHookError(context, sandbox.id, error)
	}
}
