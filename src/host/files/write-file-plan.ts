/**
 * Pure planning of a `writeFile` over the agent wire: the request body, the largest part a frame
 * admits once the envelope's own bytes are counted, the temp sibling's name and the part
 * boundaries. Content always travels base64-encoded, whose alphabet needs no JSON escaping, so
 * frame sizes are exact.
 */
import { posix } from 'node:path'
import { Base64Bytes } from '../../wire/frame.js'
import type { WriteFilePart } from '../../wire/protocol.js'

/** Longest slice of the target's basename kept in a part sequence's temp name. */
export const PART_TEMP_BASENAME_MAX_CHARS = 96

export interface WriteFileBody {
	readonly path: string
	readonly encoding: 'base64'
	readonly part?: WriteFilePart
	/** Written into the frame as its base64 string by `encodeFrameWithBase64`. */
	readonly content: Base64Bytes
}

/**
 * The `write-file` body exactly as it goes on the wire. Field order is part of "byte for byte":
 * `content` is last, so the guest can decode it from the frame's bytes without a huge string.
 */
export function writeFileBody(
	path: string,
	content: Uint8Array,
	part?: WriteFilePart,
): WriteFileBody {
	const bytes = new Base64Bytes(content)
	return part === undefined
		? { path, encoding: 'base64', content: bytes }
		: { path, encoding: 'base64', part, content: bytes }
}

export { base64Length } from '../../wire/base64-pieces.js'

/**
 * Raw bytes of content that fit a frame of `limitBytes` whose envelope, with empty content,
 * already takes `overheadBytes`. Zero when not even one base64 quantum fits.
 */
export function partBytesFitting(limitBytes: number, overheadBytes: number): number {
	const room = limitBytes - overheadBytes
	return room < 4 ? 0 : Math.floor(room / 4) * 3
}

/** `.namzu-write-<basename, at most 96 characters>.<uuid>.part`, beside the target. */
export function partTempPath(target: string, uuid: string): string {
	const base = Array.from(posix.basename(target)).slice(0, PART_TEMP_BASENAME_MAX_CHARS).join('')
	return posix.join(posix.dirname(target), `.namzu-write-${base}.${uuid}.part`)
}

export interface PartSlice {
	readonly offset: number
	readonly length: number
	readonly final: boolean
}

/** Consecutive slices of `totalBytes`, each at most `partBytes`; the last is `final`. */
export function planParts(totalBytes: number, partBytes: number): PartSlice[] {
	if (partBytes <= 0) throw new RangeError('partBytes must be positive')
	const slices: PartSlice[] = []
	for (let offset = 0; offset < totalBytes; offset += partBytes) {
		const length = Math.min(partBytes, totalBytes - offset)
		slices.push({ offset, length, final: offset + length >= totalBytes })
	}
	return slices
}
