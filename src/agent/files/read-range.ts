/**
 * Validation of a ranged `read-file` (pure). A range must ask for base64 (a utf8 slice at an
 * arbitrary offset can split a multi-byte character), and a slice above the configured ceiling is
 * refused outright, never shortened.
 */

import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn, NON_NEGATIVE_INTEGER } from '../handler/value-checks.js'

export const READ_FILE_RANGE_VARIABLE = 'NAMZU_AGENT_READ_FILE_RANGE_BYTES'

export type ReadRange =
	| { readonly ranged: false }
	/** `length` undefined means "to end of file", checked against the ceiling once the size is known. */
	| { readonly ranged: true; readonly offset: number; readonly length?: number }

function isByteCount(value: unknown): value is number {
	return isIntegerIn(value, NON_NEGATIVE_INTEGER)
}

export function rangeTooLarge(requestedBytes: number, limitBytes: number): OpRefusal {
	return new OpRefusal(
		formatRefusal(
			AGENT_REFUSAL.read_file_range_too_large,
			`requested ${requestedBytes} bytes, limit ${limitBytes} (${READ_FILE_RANGE_VARIABLE})`,
		),
	)
}

export function resolveReadRange(body: Record<string, unknown>, limitBytes: number): ReadRange {
	const { offset, length, encoding } = body
	if (offset === undefined && length === undefined) return { ranged: false }
	if (encoding !== 'base64') throw new OpRefusal(AGENT_REFUSAL.read_file_range_requires_base64)
	if (offset !== undefined && !isByteCount(offset))
		throw new OpRefusal(AGENT_REFUSAL.read_file_invalid_offset)
	if (length !== undefined && !isByteCount(length))
		throw new OpRefusal(AGENT_REFUSAL.read_file_invalid_length)
	if (length !== undefined && length > limitBytes) throw rangeTooLarge(length, limitBytes)
	return {
		ranged: true,
		offset: offset ?? 0,
		...(length === undefined ? {} : { length }),
	}
}

export interface StreamRange {
	readonly offset: number
	/** Undefined means "to end of file". */
	readonly length?: number
}

/** `read-file-stream` takes the same offset/length vocabulary but no ceiling and no encoding. */
export function resolveStreamRange(body: Record<string, unknown>): StreamRange {
	const { offset, length } = body
	if (offset !== undefined && !isByteCount(offset))
		throw new OpRefusal(AGENT_REFUSAL.read_file_invalid_offset)
	if (length !== undefined && !isByteCount(length))
		throw new OpRefusal(AGENT_REFUSAL.read_file_invalid_length)
	return { offset: offset ?? 0, ...(length === undefined ? {} : { length }) }
}

/** Bytes a range covers in a file of `sizeBytes`: a range past the end covers what exists. */
export function coveredBytes(sizeBytes: number, range: StreamRange): number {
	const available = Math.max(0, sizeBytes - range.offset)
	return range.length === undefined ? available : Math.min(range.length, available)
}
