/**
 * A bounded look at a JSON payload's bytes before `JSON.parse` sees them: one linear pass, fed a
 * chunk at a time as the bytes arrive, that refuses a payload the moment it nests deeper than
 * `maxDepth`, holds more than `maxValues` containers and members, or gives `JSON.parse` more than
 * `maxParsedBytes` to chew. What `JSON.parse` allocates is then bounded by those three numbers
 * (V8's parser is iterative: nesting alone, `[`×N, costs memory in proportion to N, never a stack
 * overflow), and the pass itself costs no more per chunk than the chunk's length.
 *
 * Bulk bytes travel as one long string (a file's base64, a write's content). The longest string of
 * at least `BULK_STRING_MIN_BYTES` with no escape and no byte above 0x7f is the payload's `bulk`:
 * it is not counted as parsed, and `frame.ts` keeps it as bytes instead of parsing it. String
 * contents are skipped with `Buffer.indexOf`, so a long string costs native speed, not a JS loop.
 */
import { isAscii } from 'node:buffer'

/** What a payload may be before it is parsed. */
export interface JsonShapeLimits {
	/** Deepest nesting of arrays and objects (`{"a":[1]}` is 2). */
	readonly maxDepth: number
	/** Most containers and members: every `[`, `{` and `,` outside strings counts one. */
	readonly maxValues: number
	/** Most bytes handed to `JSON.parse`: the payload less its bulk string. */
	readonly maxParsedBytes: number
}

/** The content bytes of the payload's bulk string (between its quotes), payload-relative. */
export interface ByteSpan {
	readonly start: number
	readonly end: number
}

/** What the scan found: where the bulk string is, if there is one. */
export interface JsonShape {
	readonly bulk?: ByteSpan
}

/** Which bound a payload broke. */
export type JsonShapeBound = 'depth' | 'values' | 'parsed-bytes'

/** A payload past one of its bounds. Plain (the wire imports nothing); each end wraps it. */
export class JsonShapeError extends Error {
	override readonly name = 'JsonShapeError'
	readonly bound: JsonShapeBound
	readonly limit: number
	/** Payload offset of the byte that broke a depth or value bound; bytes scanned otherwise. */
	readonly at: number

	constructor(bound: JsonShapeBound, limit: number, at: number) {
		super(
			bound === 'depth'
				? `JSON nests deeper than ${limit} levels (byte ${at})`
				: bound === 'values'
					? `JSON holds more than ${limit} values (byte ${at})`
					: `JSON to parse exceeds ${limit} bytes (after ${at} bytes)`,
		)
		this.bound = bound
		this.limit = limit
		this.at = at
	}
}

/** A string this long, clean, is kept as bytes rather than parsed. */
export const BULK_STRING_MIN_BYTES = 512 * 1024

/** No bound but nesting: what a peer that trusts its sender scans with. */
export const UNBOUNDED_JSON_SHAPE: JsonShapeLimits = {
	maxDepth: 64,
	maxValues: Number.POSITIVE_INFINITY,
	maxParsedBytes: Number.POSITIVE_INFINITY,
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

/** The incremental scan of one payload; `feed` its bytes in order, then `finish`. */
export class JsonShapeScanner {
	readonly #limits: JsonShapeLimits
	#scanned = 0
	#depth = 0
	#values = 0
	#inString = false
	/** The byte after a backslash is still to come (a chunk ended inside an escape). */
	#escaping = false
	#stringStart = 0
	#stringClean = true
	#bulk: ByteSpan | undefined
	/** In the chunk being fed: the next quote and backslash at or after the cursor (-1: none). */
	#quote = -2
	#backslash = -2

	constructor(limits: JsonShapeLimits) {
		this.#limits = limits
	}

	/** Bytes fed so far. */
	get scanned(): number {
		return this.#scanned
	}

	/** Scans the next bytes of the payload; throws `JsonShapeError` past a bound. */
	feed(chunk: Uint8Array): void {
		const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
		const base = this.#scanned
		this.#quote = -2
		this.#backslash = -2
		let i = 0
		while (i < bytes.length) {
			if (this.#inString) {
				i = this.#stringClean ? this.#skipClean(bytes, base, i) : this.#skipEscaped(bytes, base, i)
				continue
			}
			const byte = bytes[i] ?? 0
			if (byte === QUOTE) {
				this.#inString = true
				this.#stringClean = true
				this.#stringStart = base + i + 1
			} else if (byte === 0x5b || byte === 0x7b) {
				if (++this.#depth > this.#limits.maxDepth) {
					throw new JsonShapeError('depth', this.#limits.maxDepth, base + i)
				}
				this.#countValue(base + i)
			} else if (byte === 0x5d || byte === 0x7d) {
				this.#depth--
			} else if (byte === 0x2c) {
				this.#countValue(base + i)
			}
			i++
		}
		this.#scanned = base + bytes.length
		this.#checkParsedBytes()
	}

	/** The scan's verdict once every byte was fed. */
	finish(): JsonShape {
		this.#checkParsedBytes()
		return this.#bulk ? { bulk: this.#bulk } : {}
	}

	/**
	 * In a string with no escape and no byte above 0x7f so far: native searches for the next quote
	 * and backslash, each searched again only once the cursor passed it (every byte is searched at
	 * most once for each). Answers where scanning resumes.
	 */
	#skipClean(bytes: Buffer, base: number, i: number): number {
		if (this.#quote !== -1 && this.#quote < i) this.#quote = bytes.indexOf(QUOTE, i)
		if (this.#backslash !== -1 && this.#backslash < i) {
			this.#backslash = bytes.indexOf(BACKSLASH, i)
		}
		const quote = this.#quote
		const stop = quote === -1 ? bytes.length : quote
		const backslash = this.#backslash
		const upTo = backslash !== -1 && backslash < stop ? backslash : stop
		if (!isAscii(bytes.subarray(i, upTo))) this.#stringClean = false
		if (upTo === backslash) {
			this.#stringClean = false
			return backslash
		}
		if (quote === -1) return bytes.length
		this.#inString = false
		this.#endString(base + quote)
		return quote + 1
	}

	/** In a string that is not bulk: a plain loop to its closing quote, escapes skipped. */
	#skipEscaped(bytes: Buffer, base: number, from: number): number {
		let escaping = this.#escaping
		for (let i = from; i < bytes.length; i++) {
			if (escaping) {
				escaping = false
				continue
			}
			const byte = bytes[i]
			if (byte === BACKSLASH) escaping = true
			else if (byte === QUOTE) {
				this.#escaping = false
				this.#inString = false
				this.#endString(base + i)
				return i + 1
			}
		}
		this.#escaping = escaping
		return bytes.length
	}

	#countValue(at: number): void {
		if (++this.#values > this.#limits.maxValues) {
			throw new JsonShapeError('values', this.#limits.maxValues, at)
		}
	}

	#endString(end: number): void {
		const length = end - this.#stringStart
		if (!this.#stringClean || length < BULK_STRING_MIN_BYTES) return
		const bulk = this.#bulk
		if (bulk === undefined || length > bulk.end - bulk.start) {
			this.#bulk = { start: this.#stringStart, end }
		}
	}

	#checkParsedBytes(): void {
		const bulk = this.#bulk
		const longest = bulk ? bulk.end - bulk.start : 0
		const open = this.#inString && this.#stringClean ? this.#scanned - this.#stringStart : 0
		const parsed = this.#scanned - Math.max(longest, open)
		if (parsed > this.#limits.maxParsedBytes) {
			throw new JsonShapeError('parsed-bytes', this.#limits.maxParsedBytes, this.#scanned)
		}
	}
}

/** The whole payload scanned at once (for a payload that arrived without a scan). */
export function scanJsonShape(payload: Uint8Array, limits: JsonShapeLimits): JsonShape {
	const scanner = new JsonShapeScanner(limits)
	scanner.feed(payload)
	return scanner.finish()
}
