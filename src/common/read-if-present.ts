/**
 * The one "read this kernel or state file if it is there" of the host: a file under `/proc` or
 * `/sys` of a process or group that may be gone by the time it is read, or a record another
 * process may have removed. Any failure reads as absent; callers treat absent as the answer.
 */
import { readFile } from 'node:fs/promises'

/** The text of `path`, or undefined when it cannot be read (gone, not permitted, not a file). */
export async function readIfPresent(
	path: string,
	encoding: 'utf8' | 'latin1' = 'utf8',
): Promise<string | undefined> {
	try {
		return await readFile(path, encoding)
	} catch {
		return undefined
	}
}
