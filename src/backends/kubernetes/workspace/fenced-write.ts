/**
 * The I/O shell of holder-epoch fencing (the rules are holder-epoch.ts): read the `Sandbox`,
 * decide whether the caller's epoch may write over the stored one — refusing with
 * `KubernetesWorkspacePreconditionError` before anything is sent — then send ONE JSON patch whose
 * guard `test`s what the read saw, in the same body as the change. A guard that no longer holds
 * (another write landed in between) is re-read and decided again, a few times at most; a DELETE is
 * fenced the same way through a `resourceVersion` precondition. Without an epoch nothing here runs:
 * callers send the release-14 merge patch (workspace-mode-patch.ts).
 */
import {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	KubernetesConflictError,
	KubernetesPatchNotAppliedError,
} from '../api/api-errors.js'
import type { JsonPatchOperation } from '../api/kubernetes-client.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import { type KubernetesObject, kubernetesPaths } from '../kubernetes-objects.js'
import { epochOnlyOps, mayWriteOver, storedHolderEpoch } from './holder-epoch.js'
import {
	type KubernetesWorkspaceFencedOperation,
	KubernetesWorkspacePreconditionError,
} from './workspace-errors.js'
import {
	type OperatingMode,
	operatingModeJsonPatch,
	patchOperatingMode,
} from './workspace-mode-patch.js'

/** Reads after a guard that stopped holding, before the last `KubernetesPatchNotAppliedError` stands. */
export const FENCED_WRITE_ATTEMPTS = 4

export interface Fence {
	readonly epoch: number
	readonly operation: KubernetesWorkspaceFencedOperation
	readonly workspaceId: string
}

export interface FencedTarget {
	readonly api: KubernetesApiPort
	readonly namespace: string
	readonly sandboxName: string
	readonly signal?: AbortSignal
}

function refusal(target: FencedTarget, fence: Fence, stored: number | undefined) {
	return new KubernetesWorkspacePreconditionError({
		operation: fence.operation,
		workspaceId: fence.workspaceId,
		sandboxName: target.sandboxName,
		epoch: fence.epoch,
		storedEpoch: stored,
	})
}

/** Refuses with `KubernetesWorkspacePreconditionError` unless `fence.epoch` may write over `read`. */
export function admitFence(target: FencedTarget, fence: Fence, read: KubernetesObject): void {
	const stored = storedHolderEpoch(read)
	if (!mayWriteOver(fence.epoch, stored)) throw refusal(target, fence, stored)
}

function readSandbox(target: FencedTarget): Promise<KubernetesObject> {
	return target.api.get(
		kubernetesPaths.sandbox(target.namespace, target.sandboxName),
		target.signal ? { signal: target.signal } : {},
	)
}

/** One read and the decision: the object as read, or the refusal. Sends nothing. */
export async function checkFence(target: FencedTarget, fence: Fence): Promise<KubernetesObject> {
	const read = await readSandbox(target)
	admitFence(target, fence, read)
	return read
}

/** What a conditional write did: `landed` false when `build` found nothing to write. */
export interface ConditionalWrite {
	readonly landed: boolean
	/** The object as patched, or as last read when nothing was written. */
	readonly object: KubernetesObject
}

/**
 * read → decide (when fenced) → one JSON patch built by `build` from that read, its guards
 * included. `build` answering `undefined` means there is nothing to write (the read is returned,
 * not landed). A guard that stopped holding is re-read and rebuilt. `first` is a read the caller
 * already made.
 */
export async function writeConditional(
	target: FencedTarget,
	fence: Fence | undefined,
	build: (read: KubernetesObject) => readonly JsonPatchOperation[] | undefined,
	first?: KubernetesObject,
): Promise<ConditionalWrite> {
	let read = first
	let lastRefusal: KubernetesPatchNotAppliedError | undefined
	for (let attempt = 0; attempt < FENCED_WRITE_ATTEMPTS; attempt++) {
		read ??= await readSandbox(target)
		if (fence !== undefined) admitFence(target, fence, read)
		const operations = build(read)
		if (operations === undefined) return { landed: false, object: read }
		try {
			const object = await target.api.jsonPatch(
				kubernetesPaths.sandbox(target.namespace, target.sandboxName),
				operations,
				target.signal ? { signal: target.signal } : {},
			)
			return { landed: true, object }
		} catch (error) {
			if (!(error instanceof KubernetesPatchNotAppliedError)) throw error
			lastRefusal = error
			read = undefined
		}
	}
	throw lastRefusal
}

/** Stores `fence.epoch` on a workspace whose mode is not changing (nothing sent when already held there). */
export async function writeHolderEpoch(
	target: FencedTarget,
	fence: Fence,
	first?: KubernetesObject,
): Promise<KubernetesObject> {
	const written = await writeConditional(
		target,
		fence,
		(read) =>
			storedHolderEpoch(read) === fence.epoch ? undefined : epochOnlyOps(read, fence.epoch),
		first,
	)
	return written.object
}

/** `spec.operatingMode` ← `mode`: the release-14 merge patch without a fence, the fenced JSON patch with one. */
export function writeOperatingMode(
	target: FencedTarget,
	mode: OperatingMode,
	atMs: number,
	fence: Fence | undefined,
	first?: KubernetesObject,
): Promise<KubernetesObject> {
	if (fence === undefined) {
		return patchOperatingMode(
			target.api,
			target.namespace,
			target.sandboxName,
			mode,
			atMs,
			target.signal,
		)
	}
	return writeConditional(
		target,
		fence,
		(read) => operatingModeJsonPatch(read, mode, atMs, fence.epoch),
		first,
	).then((written) => written.object)
}

/**
 * DELETE of the workspace: unfenced, one DELETE (already gone resolves). Fenced: read (gone
 * resolves) → decide → DELETE with the read's `resourceVersion` as precondition; a conflict is
 * re-read and decided again.
 */
export async function deleteWorkspaceObject(
	target: FencedTarget,
	fence: Fence | undefined,
): Promise<void> {
	const path = kubernetesPaths.sandbox(target.namespace, target.sandboxName)
	const signalOption = target.signal ? { signal: target.signal } : {}
	if (fence === undefined) {
		await target.api.delete(path, signalOption)
		return
	}
	let lastConflict: KubernetesConflictError | undefined
	for (let attempt = 0; attempt < FENCED_WRITE_ATTEMPTS; attempt++) {
		let read: KubernetesObject
		try {
			read = await readSandbox(target)
		} catch (error) {
			if (isGone(error)) return
			throw error
		}
		admitFence(target, fence, read)
		const resourceVersion = read.metadata.resourceVersion
		try {
			await target.api.delete(path, {
				...signalOption,
				...(resourceVersion === undefined ? {} : { preconditions: { resourceVersion } }),
			})
			return
		} catch (error) {
			if (!(error instanceof KubernetesConflictError)) throw error
			lastConflict = error
		}
	}
	throw lastConflict
}

/** A GET of a missing object answers 404 (or 410), not "already gone". */
export function isGone(error: unknown): boolean {
	return (
		error instanceof KubernetesAlreadyGoneError ||
		(error instanceof KubernetesApiError && (error.status === 404 || error.status === 410))
	)
}
