/**
 * Output a model reads is bounded: what exceeds the budget is cut in the middle, keeping the head
 * (what a command printed first) and the tail (where its errors usually are), joined by a marker
 * that says how many bytes were left out. Pure; all counts are UTF-8 bytes, never split inside a
 * character.
 */

/** The line put where bytes were cut out. */
export function truncationMarker(omittedBytes: number): string {
	return `\n[… ${omittedBytes} bytes truncated …]\n`
}

/** The longest prefix of `bytes` no longer than `limit` that ends on a character boundary. */
export function utf8PrefixLength(bytes: Uint8Array, limit: number): number {
	if (limit >= bytes.length) return bytes.length
	let end = Math.max(0, limit)
	// A continuation byte (10xxxxxx) at `end` means a character starts before it.
	while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
	return end
}

/** Where the shortest suffix of at most `limit` bytes starts, on a character boundary. */
export function utf8SuffixStart(bytes: Uint8Array, limit: number): number {
	let start = Math.max(0, bytes.length - Math.max(0, limit))
	while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++
	return start
}

export interface BoundedText {
	readonly text: string
	readonly truncated: boolean
	/** Bytes left out (0 when nothing was). */
	readonly omittedBytes: number
	/** UTF-8 bytes of the whole input. */
	readonly totalBytes: number
}

/** `text` within `maxBytes` (marker excluded): head and tail kept, the middle cut out. */
export function boundText(text: string, maxBytes: number): BoundedText {
	const bytes = Buffer.from(text, 'utf8')
	if (bytes.length <= maxBytes) {
		return { text, truncated: false, omittedBytes: 0, totalBytes: bytes.length }
	}
	const headEnd = utf8PrefixLength(bytes, Math.ceil(maxBytes / 2))
	const tailStart = Math.max(headEnd, utf8SuffixStart(bytes, maxBytes - headEnd))
	return joined(bytes.subarray(0, headEnd), bytes.subarray(tailStart), bytes.length)
}

function joined(head: Uint8Array, tail: Uint8Array, totalBytes: number): BoundedText {
	const omittedBytes = totalBytes - head.length - tail.length
	const decoder = new TextDecoder()
	return {
		text: decoder.decode(head) + truncationMarker(omittedBytes) + decoder.decode(tail),
		truncated: true,
		omittedBytes,
		totalBytes,
	}
}
