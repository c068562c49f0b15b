/**
 * The reaper's view of the checkpoint store's partial directories (`.partial-<id>/`): a capture
 * names its process in `capturer.json` before writing any content, so a partial directory is
 * abandoned once that process is gone, and never while it runs (`checkpoint-store.ts` writes it).
 */
import { lstat, readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { isProcessAlive, type ProcessIdentity } from '../claims/process-identity.js'
import { partialIsAbandoned } from '../claims/reap-decision.js'
import {
	CAPTURER_FILE,
	CHECKPOINT_ID_PATTERN,
	checkpointStoreDir,
	PARTIAL_PREFIX,
} from './snapshot-layout.js'

/** The process a partial directory names as its capturer, if its record reads. */
async function capturerOf(partial: string): Promise<ProcessIdentity | undefined> {
	try {
		const raw: unknown = JSON.parse(await readFile(join(partial, CAPTURER_FILE), 'utf8'))
		if (typeof raw !== 'object' || raw === null) return undefined
		const pid: unknown = Reflect.get(raw, 'pid')
		const startTime: unknown = Reflect.get(raw, 'startTime')
		if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined
		return typeof startTime === 'string' ? { pid, startTime } : undefined
	} catch {
		return undefined
	}
}

/**
 * Removes (with `dryRun`, only names) the partial directories of captures whose host died: one
 * whose recorded capturer is gone, or — with no readable record (killed before writing it, or a
 * delete's doomed directory) — one older than `UNRECORDED_GRACE_MS`. A live capture's stays.
 */
export async function abandonedPartialCheckpoints(
	stateBase: string,
	nowMs: number,
	dryRun: boolean,
): Promise<string[]> {
	const store = checkpointStoreDir(stateBase)
	const removed: string[] = []
	for (const name of await readdir(store).catch(() => [] as string[])) {
		if (
			!name.startsWith(PARTIAL_PREFIX) ||
			!CHECKPOINT_ID_PATTERN.test(name.slice(PARTIAL_PREFIX.length))
		)
			continue
		const partial = join(store, name)
		const info = await lstat(partial).catch(() => undefined)
		if (info?.isDirectory() !== true || info.uid !== (process.getuid?.() ?? 0)) continue
		const capturer = await capturerOf(partial)
		const writerAlive = capturer === undefined ? undefined : isProcessAlive(capturer)
		if (!partialIsAbandoned({ writerAlive, ageMs: nowMs - info.mtimeMs })) continue
		if (!dryRun) await rm(partial, { recursive: true, force: true })
		removed.push(partial)
	}
	return removed
}
