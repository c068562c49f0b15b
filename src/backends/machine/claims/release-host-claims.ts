/**
 * Writing the host-claims record (`host-claims.ts`) and undoing it: unmount staging binds and the
 * sized workspace, give a caller workspace back, free the workspace and uid locks — idempotently, from the record alone,
 * once every process of the sandbox is gone. While a process of the sandbox's uid runs or a group
 * of it exists, the workspace stays handed over and both locks stay held (`decideLockRelease`). `removeStateRoot` is the one way a state root is
 * deleted: never while anything is still mounted below it (a recursive delete through a staging
 * bind would empty the caller's workspace).
 */
import { chmod, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { adoptSandboxCgroups } from '../cgroups/cgroup-limits.js'
import { LocalSandboxCleanupError } from '../machine-errors.js'
import { hostMountPointsUnder, unstage } from '../workspace/staging-mounts.js'
import { releaseVolumeWorkspace } from '../workspace/volume-workspace.js'
import { releaseWorkspaceDisk } from '../workspace/workspace-disk.js'
import { giveBackWorkspace } from '../workspace/workspace-ownership.js'
import { lockHolder, releaseLock } from './claim-locks.js'
import {
	HOST_CLAIMS_FILE_NAME,
	hostClaimsBelongTo,
	parseHostClaims,
	type SandboxHostClaims,
} from './host-claims.js'
import { lockHoldFacts } from './lock-hold.js'
import { decideLockRelease } from './reap-decision.js'

/** Writes `<stateRoot>/host-claims.json` (0600) through a temp sibling. */
export async function writeHostClaims(claims: SandboxHostClaims): Promise<void> {
	const target = join(claims.stateRoot, HOST_CLAIMS_FILE_NAME)
	const temporary = `${target}.${process.pid}.tmp`
	await writeFile(temporary, `${JSON.stringify(claims, null, 2)}\n`, { mode: 0o600 })
	await chmod(temporary, 0o600)
	await rename(temporary, target)
}

/** What a sandbox adds to its record as it goes (everything but what names the sandbox). */
export type HostClaimsUpdate = Partial<Omit<SandboxHostClaims, 'version' | 'id' | 'stateRoot'>>

/** One sandbox's record, rewritten (atomically) before each new claim is made. */
export class HostClaimsLedger {
	#claims: SandboxHostClaims

	constructor(claims: SandboxHostClaims) {
		this.#claims = claims
	}

	get current(): SandboxHostClaims {
		return this.#claims
	}

	async record(update: HostClaimsUpdate): Promise<void> {
		this.#claims = { ...this.#claims, ...update }
		await writeHostClaims(this.#claims)
	}
}

/** The record in `stateRoot` for sandbox `id`, when there is a trustworthy one. */
export async function readHostClaims(
	id: string,
	stateRoot: string,
): Promise<SandboxHostClaims | undefined> {
	let raw: unknown
	try {
		raw = JSON.parse(await readFile(join(stateRoot, HOST_CLAIMS_FILE_NAME), 'utf8'))
	} catch {
		return undefined
	}
	const claims = parseHostClaims(raw)
	return claims && hostClaimsBelongTo(claims, id, stateRoot) ? claims : undefined
}

/**
 * Undoes every claim of the record. Each step runs even when an earlier one failed; the failures
 * are reported together, with what is left behind. Safe to repeat.
 */
export async function releaseHostClaims(claims: SandboxHostClaims): Promise<void> {
	const failures: unknown[] = []
	const leftovers: string[] = []
	for (const mount of [...claims.stagingMounts].reverse()) {
		await unstage(mount).catch((error: unknown) => {
			failures.push(error)
			leftovers.push(mount)
		})
	}
	if (claims.workspaceDisk !== undefined) {
		await releaseWorkspaceDisk(claims.stateRoot, claims.workspaceDisk).catch((error: unknown) => {
			failures.push(error)
			leftovers.push(claims.workspaceDisk ?? claims.stateRoot)
		})
	}
	const bound = claims.workspaceVolume
	if (bound !== undefined) {
		await releaseVolumeWorkspace(claims.stateRoot, bound, claims.id).catch((error: unknown) => {
			failures.push(error)
			leftovers.push(bound)
		})
	}
	const { workspace, identity } = claims
	const held = identity ? await heldBy(claims, identity.uid) : undefined
	if (held && identity) {
		// A process of the uid could still write into the workspace, or act as the next sandbox
		// handed that uid: the locks (and the record that frees them later) stay.
		failures.push(held)
		leftovers.push(...(workspace ? [workspace.lockPath] : []), identity.lockPath)
		throw new LocalSandboxCleanupError(leftovers, { cause: failures[0] })
	}
	// Only a workspace this sandbox locked was handed to it: a create refused because another
	// sandbox holds the workspace must not touch that sandbox's files on the way out.
	if (workspace && identity && (await lockHolder(workspace.lockPath)) === claims.id) {
		try {
			await giveBackWorkspace(workspace, identity)
			await releaseLock(workspace.lockPath, claims.id)
		} catch (error) {
			failures.push(error)
			leftovers.push(workspace.path)
		}
	}
	// The uid is free only once nothing of the sandbox's is owned by it in a caller's workspace.
	if (identity && failures.length === 0) {
		await releaseLock(identity.lockPath, claims.id).catch((error: unknown) => {
			failures.push(error)
			leftovers.push(identity.lockPath)
		})
	}
	if (failures.length > 0) throw new LocalSandboxCleanupError(leftovers, { cause: failures[0] })
}

/** Why the sandbox's locks must stay held (`decideLockRelease`), as an error; undefined when free. */
async function heldBy(claims: SandboxHostClaims, uid: number): Promise<Error | undefined> {
	let facts = await lockHoldFacts(claims.id, uid, claims.cgroupDirs ?? [])
	if (facts.uidProcesses === 0 && facts.cgroups > 0) {
		// Groups named after this sandbox that its owner did not remove (unrecorded, or a removal
		// that failed): its own, so they go now; the locks wait only for what cannot be removed.
		await adoptSandboxCgroups(facts.cgroupDirs)
			.remove()
			.catch(() => undefined)
		facts = await lockHoldFacts(claims.id, uid, claims.cgroupDirs ?? [])
	}
	const decision = decideLockRelease(facts)
	if (decision.release) return undefined
	const what =
		decision.reason === 'uid-process-running'
			? `processes ${facts.pids.join(', ')} still run as uid ${uid}`
			: `cgroups ${facts.cgroupDirs.join(', ')} still exist`
	return new Error(`the locks of sandbox ${claims.id} stay held: ${what}`)
}

/** Removes a state root, refusing while anything is mounted below it. */
export async function removeStateRoot(stateRoot: string): Promise<void> {
	const mounted = await hostMountPointsUnder(stateRoot)
	if (mounted.length > 0) {
		throw new LocalSandboxCleanupError([stateRoot, ...mounted], {
			cause: new Error(`still mounted below the state root: ${mounted.join(', ')}`),
		})
	}
	try {
		await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 })
	} catch (error) {
		throw new LocalSandboxCleanupError([stateRoot], { cause: error })
	}
}
