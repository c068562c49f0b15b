/** What the snapshot cache's tests look at: the flock(1) processes on one key's lock. */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The flock(1) processes (holders and waiters) on `key`'s lock in the cache directory `cache`,
 * or on any key's without `key`.
 */
export function lockProcesses(cache: string, key?: string): number[] {
	const lock = join(cache, `.lock-${key ?? ''}`)
	const found: number[] = []
	for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
		try {
			const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
			const named =
				key === undefined ? cmdline.some((arg) => arg.startsWith(lock)) : cmdline.includes(lock)
			if (cmdline[0]?.endsWith('flock') && named) found.push(Number(pid))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}
