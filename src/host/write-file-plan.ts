/**
 * Pure planning of a `writeFile` over the agent wire: the request body, the largest part a frame
 * admits once the envelope's own bytes are counted, the temp sibling's name and the part
 * boundaries. Content always travels base64-encoded, whose alphabet needs no JSON escaping, so
 * frame sizes are exact.
 */
import { posix } from 'node:path'
import type { WriteFilePart } from '../wire/protocol.js'

/** Longest slice of the target's basename kept in a part sequence's temp name. */
export const PART_TEMP_BASENAME_MAX_CHARS = 96

export interface WriteFileBody {
	readonly path: string
	readonly content: string
	readonly encoding: 'base64'
	readonly part?: WriteFilePart
}

/** The `write-file` body exactly as it goes on the wire (field order is part of "byte for byte"). */
export function writeFileBody(path: string, content: string, part?: WriteFilePart): WriteFileBody {
	return part === undefined
		? { path, content, encoding: 'base64' }
		: { path, content, encoding: 'base64', part }
}

export function base64Length(bytes: number): number {
	return 4 * Math.ceil(bytes / 3)
}

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
