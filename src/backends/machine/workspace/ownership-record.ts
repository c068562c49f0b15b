/**
 * The record of a caller workspace's original owners, written by GNU `find -printf '%U %G %P\0'`
 * before the workspace is handed to the sandbox uid: one NUL-terminated `uid gid relative-path`
 * entry per entry whose owner differs from the workspace root's (names are raw bytes, so any file
 * name survives). Read back as a stream with one entry buffered at a time. Pure parsing plus the
 * streaming reader.
 */
import { createReadStream } from 'node:fs'

export interface OwnershipEntry {
	readonly uid: number
	readonly gid: number
	/** Path relative to the workspace root, raw bytes, never empty. */
	readonly path: Buffer
}

/** The `-printf` format that writes the record. */
export const OWNERSHIP_RECORD_FORMAT = '%U %G %P\\0'
/** Longest entry kept (a path beyond this cannot be chowned by path anyway). */
export const MAX_OWNERSHIP_ENTRY_BYTES = 64 * 1024

const SPACE = 0x20
const NUL = 0

function decimal(bytes: Buffer): number | undefined {
	const text = bytes.toString('latin1')
	if (!/^\d{1,10}$/.test(text)) return undefined
	const value = Number(text)
	return value <= 0xffff_ffff ? value : undefined
}

/** One entry without its terminator; undefined when it is malformed (it is then skipped). */
export function parseOwnershipEntry(bytes: Buffer): OwnershipEntry | undefined {
	const first = bytes.indexOf(SPACE)
	if (first < 0) return undefined
	const second = bytes.indexOf(SPACE, first + 1)
	if (second < 0) return undefined
	const uid = decimal(bytes.subarray(0, first))
	const gid = decimal(bytes.subarray(first + 1, second))
	const path = bytes.subarray(second + 1)
	if (uid === undefined || gid === undefined || path.length === 0) return undefined
	if (path[0] === 0x2f) return undefined
	const components = path.toString('latin1').split('/')
	if (components.some((part) => part === '..' || part === '')) return undefined
	return { uid, gid, path: Buffer.from(path) }
}

export function formatOwnershipEntry(entry: OwnershipEntry): Buffer {
	return Buffer.concat([Buffer.from(`${entry.uid} ${entry.gid} `), entry.path, Buffer.from([NUL])])
}

/** Streams the entries of a record file; a missing file is an empty record. */
export async function* readOwnershipRecord(path: string): AsyncGenerator<OwnershipEntry> {
	const stream = createReadStream(path, { highWaterMark: 64 * 1024 })
	let pending: Buffer[] = []
	let pendingBytes = 0
	let overflowing = false
	try {
		for await (const chunk of stream as AsyncIterable<Buffer>) {
			let start = 0
			for (;;) {
				const end = chunk.indexOf(NUL, start)
				if (end < 0) break
				const piece = chunk.subarray(start, end)
				if (!overflowing && pendingBytes + piece.length <= MAX_OWNERSHIP_ENTRY_BYTES) {
					const entry = parseOwnershipEntry(Buffer.concat([...pending, piece]))
					if (entry) yield entry
				}
				pending = []
				pendingBytes = 0
				overflowing = false
				start = end + 1
			}
			const rest = chunk.subarray(start)
			if (overflowing || pendingBytes + rest.length > MAX_OWNERSHIP_ENTRY_BYTES) {
				overflowing = true
				pending = []
				pendingBytes = 0
			} else if (rest.length > 0) {
				pending.push(Buffer.from(rest))
				pendingBytes += rest.length
			}
		}
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
	}
}
