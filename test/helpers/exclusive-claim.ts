/**
 * A machine-wide claim between test processes (and between two checkouts' suites on one machine):
 * an O_EXCL lock file under /run/lock naming the claiming pid. A claim whose pid no longer runs is
 * taken over, so a SIGKILLed test process never blocks the next run.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { isRunning } from './process-running.js'

/** Claims `dir/name` now: the release, or undefined when a live process holds it. */
export function claimExclusive(dir: string, name: string): (() => void) | undefined {
	mkdirSync(dir, { recursive: true })
	const path = join(dir, name)
	for (let attempt = 0; attempt < 2; attempt++) {
		try {
			const fd = openSync(path, 'wx')
			writeSync(fd, String(process.pid))
			closeSync(fd)
			return () => {
				try {
					unlinkSync(path)
				} catch {
					// Already released.
				}
			}
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
			let holder = 0
			try {
				holder = Number(readFileSync(path, 'utf8'))
			} catch {
				// Released between the open and the read: the next attempt takes it.
				continue
			}
			if (holder > 0 && (holder === process.pid || isRunning(holder))) return undefined
			try {
				unlinkSync(path)
			} catch {
				// Another process took it over first; the next attempt says who holds it.
			}
		}
	}
	return undefined
}

/** Waits for the claim (its holder ends or releases it); rejects naming `what` after `timeoutMs`. */
export async function waitForExclusive(
	dir: string,
	name: string,
	what: string,
	timeoutMs: number,
): Promise<() => void> {
	const deadline = Date.now() + timeoutMs
	for (;;) {
		const release = claimExclusive(dir, name)
		if (release !== undefined) return release
		if (Date.now() > deadline) {
			throw new Error(`${what}: ${join(dir, name)} still held after ${timeoutMs} ms`)
		}
		await delay(200)
	}
}
