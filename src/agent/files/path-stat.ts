/**
 * What the file verbs say of a path: `lstat` (a symlink is reported, never followed) as the wire's
 * `WireFileStat`, and the request fields they share, checked (pure but for the `lstat`).
 */
import type { Stats } from 'node:fs'
import { lstat, readlink } from 'node:fs/promises'
import type { WireFileStat, WireFileType } from '../../wire/file-verbs.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'

export function fileTypeOf(stats: Stats): WireFileType {
	if (stats.isFile()) return 'file'
	if (stats.isDirectory()) return 'directory'
	if (stats.isSymbolicLink()) return 'symlink'
	return 'other'
}

/** `lstat` of `path` (a `/proc/self/fd/<fd>/name` entry or a jailed path) as the wire's stat. */
export async function statOf(path: string): Promise<WireFileStat> {
	const stats = await lstat(path)
	const type = fileTypeOf(stats)
	const base = {
		type,
		size: stats.size,
		mode: stats.mode & 0o7777,
		mtimeMs: Math.trunc(stats.mtimeMs),
	}
	if (type !== 'symlink') return base
	const target = await readlink(path).catch(() => undefined)
	return target === undefined ? base : { ...base, symlinkTarget: target }
}

/** A refusal of a malformed file-verb body, naming the field. */
export function invalidFileRequest(detail: string): OpRefusal {
	return new OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_file_request, detail))
}

/** `recursive`: absent (false) or a boolean. */
export function recursiveOf(body: Record<string, unknown>): boolean {
	const value = body.recursive
	if (value === undefined) return false
	if (typeof value !== 'boolean') throw invalidFileRequest('recursive must be a boolean')
	return value
}
