/**
 * The watch stream's framing, pure: one JSON event per line. Every line is bounded — the API
 * server is trusted less than a guest only in degree, and a watch must never grow the host without
 * limit — and every event is checked for shape before anything reads it.
 */

import { isRecord } from '../../../common/is-record.js'
import { SandboxError } from '../../../contract/errors.js'

/** Longest watch event line accepted; a claim or Sandbox is a few KiB. */
export const MAX_WATCH_EVENT_BYTES = 1024 * 1024

export type KubernetesWatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'

export interface KubernetesWatchEvent<T = unknown> {
	readonly type: KubernetesWatchEventType
	/** The object; for `ERROR`, the Status the server sent. */
	readonly object: T
}

const EVENT_TYPES: ReadonlySet<string> = new Set([
	'ADDED',
	'MODIFIED',
	'DELETED',
	'BOOKMARK',
	'ERROR',
])

/** Why a watch line was refused. */
export type WatchFramingProblem = 'line-too-long' | 'not-json' | 'not-an-event'

/** The API server sent a watch stream this client will not read (the acquire then polls). */
export class KubernetesWatchFramingError extends SandboxError<'watch-stream-refused'> {
	override readonly name = 'KubernetesWatchFramingError'
	readonly problem: WatchFramingProblem

	constructor(problem: WatchFramingProblem) {
		super(`kubernetes watch stream refused: ${problem}`, 'watch-stream-refused', {
			retryable: true,
		})
		this.problem = problem
	}
}

/** Parses one line; throws `WatchFramingError` for anything that is not a watch event. */
export function parseWatchEvent(line: string): KubernetesWatchEvent {
	let value: unknown
	try {
		value = JSON.parse(line)
	} catch {
		throw new KubernetesWatchFramingError('not-json')
	}
	if (!isRecord(value) || typeof value.type !== 'string' || !EVENT_TYPES.has(value.type)) {
		throw new KubernetesWatchFramingError('not-an-event')
	}
	if (!isRecord(value.object)) throw new KubernetesWatchFramingError('not-an-event')
	return { type: value.type as KubernetesWatchEventType, object: value.object }
}

/**
 * Splits a byte stream into lines without holding more than `maxLineBytes` of one line; a longer
 * line throws instead of growing. Empty lines are skipped.
 */
export class WatchLineSplitter {
	readonly #maxLineBytes: number
	#pending: Buffer[] = []
	#pendingBytes = 0

	constructor(maxLineBytes = MAX_WATCH_EVENT_BYTES) {
		this.#maxLineBytes = maxLineBytes
	}

	push(chunk: Uint8Array): string[] {
		const lines: string[] = []
		let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
		for (;;) {
			const newline = data.indexOf(0x0a)
			if (newline === -1) {
				this.#hold(data)
				return lines
			}
			this.#hold(data.subarray(0, newline))
			const line = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8').trim()
			this.#pending = []
			this.#pendingBytes = 0
			if (line !== '') lines.push(line)
			data = data.subarray(newline + 1)
		}
	}

	/** What is left when the stream ends (a final line without its newline). */
	end(): string | undefined {
		const line = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8').trim()
		this.#pending = []
		this.#pendingBytes = 0
		return line === '' ? undefined : line
	}

	#hold(piece: Buffer): void {
		if (piece.byteLength === 0) return
		this.#pendingBytes += piece.byteLength
		if (this.#pendingBytes > this.#maxLineBytes)
			throw new KubernetesWatchFramingError('line-too-long')
		this.#pending.push(Buffer.from(piece))
	}
}
