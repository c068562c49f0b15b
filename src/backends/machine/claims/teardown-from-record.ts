/**
 * The one teardown a process other than a sandbox's creator runs, from what the sandbox recorded
 * (a kept-alive descriptor, or the host-claims record of a sandbox whose host died): SIGKILL the
 * launched process — only while it is still the very process recorded, pid plus start time — and
 * its descendants, kill and remove the cgroups, undo the host claims (staging mounts, the sized
 * workspace, a caller workspace given back to its owners, the uid), then remove the state root (a
 * caller's workspace is outside it and stays). Idempotent; what could not be undone is reported
 * as one `LocalSandboxCleanupError` and left for the next attempt.
 */

import { adoptSandboxCgroups } from '../cgroups/cgroup-limits.js'
import { existingSandboxCgroups } from '../cgroups/sandbox-cgroup-scan.js'
import { LocalSandboxCleanupError } from '../machine-errors.js'
import { releaseWorkspaceDisk } from '../workspace/workspace-disk.js'
import type { SandboxHostClaims } from './host-claims.js'
import { isProcessAlive, type ProcessIdentity } from './process-identity.js'
import { descendantPids, waitUntilGone } from './process-tree.js'
import { releaseHostClaims, removeStateRoot } from './release-host-claims.js'

/** Bound on waiting for killed sandbox processes to vanish. */
const KILL_WAIT_MS = 5_000

/** What a recorded sandbox left on the host, as far as its records say. */
export interface SandboxRemains {
	readonly stateRoot: string
	/** The launched process (a kept-alive sandbox's watchdog, bwrap, or the plain agent). */
	readonly launcher?: ProcessIdentity
	readonly cgroupDirs: readonly string[]
	readonly claims?: SandboxHostClaims
	/**
	 * Without a claims record (descriptors written before records existed), an ephemeral
	 * workspace that may be a sized disk, found by its fixed layout.
	 */
	readonly ephemeralWorkspace?: string
}

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL')
	} catch {
		// Already gone.
	}
}

async function killLauncher(identity: ProcessIdentity): Promise<void> {
	if (!isProcessAlive(identity)) return
	const descendants = await descendantPids(identity.pid)
	// Re-check right before signalling: the recorded pid must still be the same process.
	if (isProcessAlive(identity)) killQuietly(identity.pid)
	for (const pid of descendants) killQuietly(pid)
	await waitUntilGone([identity.pid, ...descendants], KILL_WAIT_MS)
}

export async function tearDownFromRecord(remains: SandboxRemains): Promise<void> {
	if (remains.launcher) await killLauncher(remains.launcher)
	const failures: unknown[] = []
	// The recorded groups and any other named after the sandbox (one its host died before recording).
	const id = remains.claims?.id ?? /namzu-sbx-([0-9a-f]{12})$/.exec(remains.stateRoot)?.[1]
	const groups =
		id === undefined ? remains.cgroupDirs : await existingSandboxCgroups(id, remains.cgroupDirs)
	await adoptSandboxCgroups(groups)
		.remove()
		.catch((error: unknown) => failures.push(error))
	const { claims } = remains
	if (claims === undefined && remains.ephemeralWorkspace !== undefined) {
		await releaseWorkspaceDisk(remains.stateRoot, remains.ephemeralWorkspace).catch(
			(error: unknown) => failures.push(error),
		)
	}
	const claimsReleased =
		claims === undefined ||
		(await releaseHostClaims(claims).then(
			() => true,
			(error: unknown) => {
				failures.push(error)
				return false
			},
		))
	// Without its records a failed give-back could never be retried: keep the state root then.
	if (claimsReleased) {
		await removeStateRoot(remains.stateRoot).catch((error: unknown) => failures.push(error))
	}
	if (failures.length === 0) return
	const leftovers = failures.flatMap((failure) =>
		failure instanceof LocalSandboxCleanupError ? [...failure.leftovers] : [],
	)
	throw new LocalSandboxCleanupError(leftovers, { cause: failures[0] })
}
