/**
 * Holder epochs, as pure rules and JSON-patch pieces. The epoch a `Sandbox` is held at lives in
 * the `sandbox.namzu.ai/holder-epoch` annotation (absent reads as 0). A write carrying epoch `e`
 * may land only while the stored epoch is `<= e`; JSON Patch `test` is equality, so "stored ≤ e"
 * is decided here on a read, and the patch then `test`s the exact value that read saw (or, for an
 * object with no epoch yet, the whole annotation map it saw) in the same body as the change — a
 * holder that raised the epoch in between makes the API server apply nothing.
 */
import type { JsonPatchOperation } from '../api/kubernetes-client.js'
import type { KubernetesObject } from '../kubernetes-objects.js'

export const HOLDER_EPOCH_ANNOTATION = 'sandbox.namzu.ai/holder-epoch'

/** What the annotation holds: a non-negative safe integer, written in decimal. */
const EPOCH_TEXT = /^(0|[1-9][0-9]*)$/

/** `options.epoch` is a non-negative safe integer. */
export function isHolderEpoch(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/**
 * The epoch stored on `object`: 0 without the annotation, `undefined` when the annotation holds
 * something no holder could have written (no epoch can prove it is above that).
 */
export function storedHolderEpoch(object: KubernetesObject): number | undefined {
	const text = object.metadata.annotations?.[HOLDER_EPOCH_ANNOTATION]
	if (text === undefined) return 0
	if (typeof text !== 'string' || !EPOCH_TEXT.test(text)) return undefined
	const value = Number(text)
	return Number.isSafeInteger(value) ? value : undefined
}

/** May a write carrying `epoch` land over `stored`? */
export function mayWriteOver(epoch: number, stored: number | undefined): boolean {
	return stored !== undefined && stored <= epoch
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
export function jsonPointerToken(key: string): string {
	return key.replaceAll('~', '~0').replaceAll('/', '~1')
}

/**
 * `add`s of `entries` to `read`'s annotations: one op per key into the map `read` has, or one op
 * creating the map when it has none (an `add` below a missing member fails).
 */
export function annotationAddOps(
	read: KubernetesObject,
	entries: Readonly<Record<string, string>>,
): JsonPatchOperation[] {
	if (read.metadata.annotations === undefined) {
		return [{ op: 'add', path: '/metadata/annotations', value: { ...entries } }]
	}
	return Object.entries(entries).map(([key, value]) => ({
		op: 'add' as const,
		path: `/metadata/annotations/${jsonPointerToken(key)}`,
		value,
	}))
}

/**
 * The `test` that pins the epoch `read` saw: the annotation's exact text when present; otherwise
 * the whole annotation map (an epoch added since changes it), or the resourceVersion when the
 * object had no map at all.
 */
export function epochGuardOps(read: KubernetesObject): JsonPatchOperation[] {
	const annotations = read.metadata.annotations
	const text = annotations?.[HOLDER_EPOCH_ANNOTATION]
	if (text !== undefined) {
		return [
			{
				op: 'test',
				path: `/metadata/annotations/${jsonPointerToken(HOLDER_EPOCH_ANNOTATION)}`,
				value: text,
			},
		]
	}
	if (annotations !== undefined) {
		return [{ op: 'test', path: '/metadata/annotations', value: annotations }]
	}
	return [{ op: 'test', path: '/metadata/resourceVersion', value: read.metadata.resourceVersion }]
}

/** The body that stores `epoch` and changes nothing else (an adopt or resume of a running workspace). */
export function epochOnlyOps(read: KubernetesObject, epoch: number): JsonPatchOperation[] {
	return [
		...epochGuardOps(read),
		...annotationAddOps(read, { [HOLDER_EPOCH_ANNOTATION]: String(epoch) }),
	]
}
