/**
 * The one poll-until-deadline loop: for state the kernel offers no event for (a process gone, a
 * cgroup empty, a freezer settled), ask every `POLL_INTERVAL_MS` until the answer is yes or the
 * deadline passes.
 */
import { setTimeout as sleep } from 'node:timers/promises'

/** How often a poll asks again: short next to any deadline it serves, long next to a /proc read. */
export const POLL_INTERVAL_MS = 10

/**
 * Calls `done` until it answers true (→ true) or `deadlineAt` (a `performance.now()` time) has
 * passed with it still false (→ false). `done` is always asked at least once, and once more after
 * the last wait, so a deadline already past still sees the current state.
 */
export async function pollUntil(
	done: () => boolean | Promise<boolean>,
	deadlineAt: number,
): Promise<boolean> {
	for (;;) {
		if (await done()) return true
		const left = deadlineAt - performance.now()
		if (left <= 0) return false
		await sleep(Math.min(POLL_INTERVAL_MS, left))
	}
}
