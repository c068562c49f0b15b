/**
 * What still holds a sandbox's uid and workspace locks on this host (the facts
 * `decideLockRelease` in `reap-decision.ts` judges): a live process whose real, effective, saved
 * or filesystem uid is the sandbox's — read from `/proc/<pid>/status`, since a non-dumpable
 * process's `/proc/<pid>` belongs to root — and the sandbox's cgroups that still exist.
 */
import { readdir, readFile } from 'node:fs/promises'
import { existingSandboxCgroups } from '../cgroups/sandbox-cgroup-scan.js'
import { waitUntilGone } from './process-tree.js'
import type { LockHoldFacts } from './reap-decision.js'

/** How long a release waits for processes of the uid that are on their way out. */
const EXIT_WAIT_MS = 2_000

/** The four uids of `Uid:` and the state letter of `/proc/<pid>/status` text (pure). */
export function parseStatusIds(text: string): {
	readonly uids: readonly number[]
	readonly state?: string
} {
	const uids = /^Uid:\s+(.*)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number) ?? []
	const state = /^State:\s+(\S)/m.exec(text)?.[1]
	return { uids: uids.filter(Number.isSafeInteger), ...(state === undefined ? {} : { state }) }
}

/** Live (non-zombie) processes running with `uid` as any of their uids. */
export async function processesOfUid(uid: number): Promise<number[]> {
	const found: number[] = []
	for (const entry of await readdir('/proc').catch(() => [])) {
		if (!/^\d+$/.test(entry)) continue
		let text: string
		try {
			text = await readFile(`/proc/${entry}/status`, 'utf8')
		} catch {
			// Exited while we looked.
			continue
		}
		const { uids, state } = parseStatusIds(text)
		if (state !== 'Z' && state !== 'X' && uids.includes(uid)) found.push(Number(entry))
	}
	return found
}

export interface LockHoldDetail extends LockHoldFacts {
	readonly pids: readonly number[]
	readonly cgroupDirs: readonly string[]
}

/**
 * The facts for sandbox `id` (its uid when it has one, the groups it recorded). Processes of the
 * uid already dying are given a moment to go, so a release right after a kill is not refused.
 */
export async function lockHoldFacts(
	id: string,
	uid: number | undefined,
	recordedCgroups: readonly string[],
): Promise<LockHoldDetail> {
	let pids = uid === undefined ? [] : await processesOfUid(uid)
	if (uid !== undefined && pids.length > 0 && (await waitUntilGone(pids, EXIT_WAIT_MS))) {
		pids = await processesOfUid(uid)
	}
	const cgroupDirs = await existingSandboxCgroups(id, recordedCgroups)
	return { uidProcesses: pids.length, cgroups: cgroupDirs.length, pids, cgroupDirs }
}
