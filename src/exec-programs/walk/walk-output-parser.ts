/**
 * Incremental reader of the guest walk program's JSON-lines output. Text arrives in arbitrary
 * chunks; each complete line becomes one validated record. Everything the guest says is treated as
 * untrusted: a line over the size bound, a malformed record, a path outside the root, a bad size,
 * more entries than asked for, or anything after the final record is a `FileWalkProtocolError`.
 */
import { posix } from 'node:path'
import type { SandboxFileEntry } from '../../contract/sandbox.js'
import { FileWalkProtocolError } from './walk-errors.js'

export const MAX_WALK_LINE_CHARS = 65_536

export type WalkRecord =
	| { readonly type: 'entry'; readonly entry: SandboxFileEntry }
	| { readonly type: 'done' }
	| { readonly type: 'error'; readonly message: string; readonly code?: string }

function isInside(root: string, path: string): boolean {
	if (path === root) return true
	return path.startsWith(root === '/' ? '/' : `${root}/`)
}

function parseLine(line: string): Record<string, unknown> {
	let value: unknown
	try {
		value = JSON.parse(line)
	} catch {
		throw new FileWalkProtocolError('invalid-record', 'a line is not JSON')
	}
	if (typeof value !== 'object' || value === null || Array.isArray(value)) {
		throw new FileWalkProtocolError('invalid-record', 'a line is not a JSON object')
	}
	return value as Record<string, unknown>
}

export class WalkOutputParser {
	readonly #root: string
	readonly #maxEntries: number
	#pending = ''
	#entries = 0
	#ended = false

	constructor(root: string, maxEntries: number) {
		this.#root = root
		this.#maxEntries = maxEntries
	}

	/** Whether a final (`done` or `error`) record has been read. */
	get ended(): boolean {
		return this.#ended
	}

	get entryCount(): number {
		return this.#entries
	}

	/** Feeds a chunk of stdout; returns the records completed by it, in order. */
	push(text: string): WalkRecord[] {
		const records: WalkRecord[] = []
		let start = 0
		for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', start)) {
			const line = this.#pending + text.slice(start, newline)
			this.#pending = ''
			start = newline + 1
			this.#checkLength(line.length)
			if (line !== '') records.push(this.#record(line))
		}
		this.#pending += text.slice(start)
		this.#checkLength(this.#pending.length)
		return records
	}

	/** The output is over: a trailing partial line means it was cut short. */
	finish(): void {
		if (this.#pending !== '') {
			throw new FileWalkProtocolError('output-truncated', 'the last line has no terminator')
		}
	}

	#checkLength(length: number): void {
		if (length > MAX_WALK_LINE_CHARS) {
			throw new FileWalkProtocolError(
				'line-too-long',
				`a line exceeds ${MAX_WALK_LINE_CHARS} characters`,
			)
		}
	}

	#record(line: string): WalkRecord {
		if (this.#ended) {
			throw new FileWalkProtocolError('record-after-end', 'a record follows the final record')
		}
		const value = parseLine(line)
		switch (value.type) {
			case 'entry':
				return { type: 'entry', entry: this.#entry(value) }
			case 'done':
				this.#ended = true
				return { type: 'done' }
			case 'error': {
				this.#ended = true
				const message = typeof value.message === 'string' ? value.message : 'unknown error'
				return typeof value.code === 'string'
					? { type: 'error', message, code: value.code }
					: { type: 'error', message }
			}
			default:
				throw new FileWalkProtocolError('invalid-record', 'a record has an unknown type')
		}
	}

	#entry(value: Record<string, unknown>): SandboxFileEntry {
		const { path, size } = value
		if (typeof path !== 'string' || !path.startsWith('/') || path.includes('\0')) {
			throw new FileWalkProtocolError('invalid-record', 'an entry path is not absolute')
		}
		if (posix.normalize(path) !== path || (path.length > 1 && path.endsWith('/'))) {
			throw new FileWalkProtocolError('path-outside-root', 'an entry path is not normalised')
		}
		if (!isInside(this.#root, path)) {
			throw new FileWalkProtocolError('path-outside-root', 'an entry path is outside the root')
		}
		if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
			throw new FileWalkProtocolError('invalid-size', 'an entry size is not a non-negative integer')
		}
		this.#entries++
		if (this.#entries > this.#maxEntries) {
			throw new FileWalkProtocolError(
				'too-many-entries',
				`more than maxEntries (${this.#maxEntries}) entries`,
			)
		}
		return { path, size }
	}
}
