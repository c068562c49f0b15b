// Crash cleanup for test runs: every temporary cluster state directory records the pid of the
// Node process that owns it (`owner.json`). At the next start, any `namzu-cluster-*` directory
// whose owner is gone has its recorded processes killed (pid-registry checks each is still ours)
// and is removed, so a crashed Vitest worker leaves nothing running for long. Loop devices of dead
// owners (block claims) are unmounted and detached first: removing a directory through a mounted
// claim would empty it, and a mount point cannot be removed.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reapAbandonedLoops } from './kubelet/loop-devices.js'
import { isRecord } from './paths.js'
import { killRecorded } from './pid-registry.js'

export const tempStatePrefix = 'namzu-cluster-'

export function writeOwner(stateDir: string): void {
	writeFileSync(join(stateDir, 'owner.json'), JSON.stringify({ pid: process.pid }))
}

function ownerAlive(stateDir: string): boolean {
	const file = join(stateDir, 'owner.json')
	if (!existsSync(file)) return false
	try {
		const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'))
		if (!isRecord(parsed) || typeof parsed.pid !== 'number') return false
		return existsSync(`/proc/${parsed.pid}`)
	} catch {
		return false
	}
}

/** Kills and removes the temporary clusters of owners that no longer exist; returns their dirs. */
export async function reapAbandonedRuns(root: string = tmpdir()): Promise<string[]> {
	const reaped: string[] = []
	await reapAbandonedLoops()
	for (const entry of readdirSync(root)) {
		if (!entry.startsWith(tempStatePrefix)) continue
		const dir = join(root, entry)
		if (ownerAlive(dir)) continue
		await killRecorded(dir)
		rmSync(dir, { recursive: true, force: true })
		reaped.push(dir)
	}
	return reaped
}
