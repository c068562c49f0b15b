/**
 * What one local sandbox holds on the host beyond its state directory — the sandbox uid lock, a
 * caller workspace handed to that uid (with the record of its original owners and its lock),
 * staging bind mounts, the sized workspace's loop mount, its cgroups — and who holds it (the
 * creating host process, the launched process), as one record, `<stateRoot>/host-claims.json`.
 * Each claim is written here before it is made, so a sandbox whose host died can be undone from
 * this record alone (`release-host-claims.ts`, `local-garbage.ts`); a kept-alive sandbox's
 * descriptor carries the same record. Pure: shape, parsing and the check that a record names only
 * what belongs to its sandbox.
 */

import { dirname } from 'node:path'
import { isRecord } from '../../../common/is-record.js'
import { isWithin } from '../path-containment.js'
import type { WorkspaceOwnership } from '../workspace/workspace-ownership.js'
import { CLAIMS_DIR_NAME, uidLockName, workspaceLockName } from './claim-locks.js'

export const HOST_CLAIMS_FILE_NAME = 'host-claims.json'
export const HOST_CLAIMS_VERSION = 1
/** Inside the state root: the record of a caller workspace's original owners. */
export const OWNERSHIP_RECORD_NAME = 'workspace-owners'
/** Inside the state root: where staging binds are mounted. */
export const STAGING_DIR_NAME = 'mnt'
/** Inside the state root: the ephemeral workspace. */
export const EPHEMERAL_WORKSPACE_NAME = 'workspace'

/** The host uid/gid range a local sandbox was given, as recorded for crash-safe teardown. */
export interface ClaimedIdentity {
	readonly uid: number
	readonly gid: number
	readonly lockPath: string
}

/** A caller workspace a local sandbox took ownership of, as recorded so it can be handed back. */
export interface ClaimedWorkspace extends WorkspaceOwnership {
	readonly lockPath: string
}

/** What one local sandbox holds on the host and who holds it, written before each claim is made. */
export interface SandboxHostClaims {
	readonly version: typeof HOST_CLAIMS_VERSION
	readonly id: string
	readonly stateRoot: string
	/**
	 * The host process that made the claims (pid + `/proc` start time): while it lives, the sandbox
	 * is its to undo (a kept-alive sandbox's descriptor names its launcher as well).
	 */
	readonly owner?: { readonly pid: number; readonly startTime: string }
	/** The per-sandbox uid (root hosts only). */
	readonly identity?: ClaimedIdentity
	/** A caller workspace handed to `identity` for the sandbox's lifetime. */
	readonly workspace?: ClaimedWorkspace
	/** Staging bind mounts, in the order they were made. */
	readonly stagingMounts: readonly string[]
	/** `diskLimitMb`: the ephemeral workspace (`<stateRoot>/workspace`), a loop-mounted image. */
	readonly workspaceDisk?: string
	/**
	 * The ephemeral workspace (`<stateRoot>/workspace`) bound from the state directory's
	 * copy-on-write volume, whose user this sandbox is (`volume-workspace.ts`).
	 */
	readonly workspaceVolume?: string
	/** The `<sandbox>/` cgroup directories, recorded before they are made. */
	readonly cgroupDirs?: readonly string[]
	/** The launched process (bwrap, its watchdog, or the plain agent), once it exists. */
	readonly launcher?: { readonly pid: number; readonly startTime: string }
	/** The runtime cache files it binds (`runtime-cache.ts`), named before they are written. */
	readonly runtimeFiles?: readonly string[]
}

/** Where an ephemeral workspace is, and so where a sized one is mounted. */
export function ephemeralWorkspacePath(stateRoot: string): string {
	return `${stateRoot}/${EPHEMERAL_WORKSPACE_NAME}`
}

export function emptyClaims(
	id: string,
	stateRoot: string,
	owner?: { readonly pid: number; readonly startTime: string },
): SandboxHostClaims {
	return {
		version: HOST_CLAIMS_VERSION,
		id,
		stateRoot,
		...(owner ? { owner } : {}),
		stagingMounts: [],
	}
}

export function uidLockPath(stateRoot: string, uid: number): string {
	return `${dirname(stateRoot)}/${CLAIMS_DIR_NAME}/${uidLockName(uid)}`
}

export function workspaceLockPath(stateRoot: string, dev: number, ino: number): string {
	return `${dirname(stateRoot)}/${CLAIMS_DIR_NAME}/${workspaceLockName(dev, ino)}`
}

function id32(value: unknown): value is number {
	return (
		typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 0xffff_ffff
	)
}

function nonNegative(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** A sandbox's own cgroup directory: absolute, no `..`, named `namzu-sbx-<id>`. */
export function isSandboxCgroupDir(dir: string, id: string): boolean {
	return dir.startsWith('/') && !dir.includes('/../') && dir.endsWith(`/namzu-sbx-${id}`)
}

function stringList(raw: unknown): string[] | undefined {
	return Array.isArray(raw) && raw.every((item) => typeof item === 'string')
		? raw.map(String)
		: undefined
}

function parseOwner(raw: unknown): SandboxHostClaims['owner'] {
	if (!isRecord(raw) || !nonNegative(raw.pid) || raw.pid === 0) return undefined
	if (typeof raw.startTime !== 'string' || !/^\d+$/.test(raw.startTime)) return undefined
	return { pid: raw.pid, startTime: raw.startTime }
}

function parseIdentity(raw: unknown): ClaimedIdentity | undefined {
	if (!isRecord(raw) || !id32(raw.uid) || !id32(raw.gid) || typeof raw.lockPath !== 'string') {
		return undefined
	}
	return { uid: raw.uid, gid: raw.gid, lockPath: raw.lockPath }
}

function parseWorkspace(raw: unknown): ClaimedWorkspace | undefined {
	if (!isRecord(raw)) return undefined
	const { path, dev, ino, ownerUid, ownerGid, recordPath, lockPath } = raw
	if (typeof path !== 'string' || typeof recordPath !== 'string' || typeof lockPath !== 'string') {
		return undefined
	}
	if (!nonNegative(dev) || !nonNegative(ino) || !id32(ownerUid) || !id32(ownerGid)) return undefined
	return { path, dev, ino, ownerUid, ownerGid, recordPath, lockPath }
}

/** A well-formed record, or undefined. */
export function parseHostClaims(raw: unknown): SandboxHostClaims | undefined {
	if (!isRecord(raw) || raw.version !== HOST_CLAIMS_VERSION) return undefined
	if (typeof raw.id !== 'string' || typeof raw.stateRoot !== 'string') return undefined
	const mounts = stringList(raw.stagingMounts)
	if (mounts === undefined) return undefined
	const owner = raw.owner === undefined ? undefined : parseOwner(raw.owner)
	if (raw.owner !== undefined && owner === undefined) return undefined
	const identity = raw.identity === undefined ? undefined : parseIdentity(raw.identity)
	const workspace = raw.workspace === undefined ? undefined : parseWorkspace(raw.workspace)
	if (raw.identity !== undefined && identity === undefined) return undefined
	if (raw.workspace !== undefined && workspace === undefined) return undefined
	const disk = raw.workspaceDisk
	if (disk !== undefined && typeof disk !== 'string') return undefined
	const bound = raw.workspaceVolume
	if (bound !== undefined && typeof bound !== 'string') return undefined
	const groups = raw.cgroupDirs === undefined ? undefined : stringList(raw.cgroupDirs)
	if (raw.cgroupDirs !== undefined && groups === undefined) return undefined
	const runtime = raw.runtimeFiles === undefined ? undefined : stringList(raw.runtimeFiles)
	if (raw.runtimeFiles !== undefined && runtime === undefined) return undefined
	const launcher = raw.launcher === undefined ? undefined : parseOwner(raw.launcher)
	if (raw.launcher !== undefined && launcher === undefined) return undefined
	return {
		version: HOST_CLAIMS_VERSION,
		id: raw.id,
		stateRoot: raw.stateRoot,
		...(owner ? { owner } : {}),
		...(identity ? { identity } : {}),
		...(workspace ? { workspace } : {}),
		stagingMounts: mounts,
		...(disk === undefined ? {} : { workspaceDisk: disk }),
		...(bound === undefined ? {} : { workspaceVolume: bound }),
		...(groups === undefined ? {} : { cgroupDirs: groups }),
		...(launcher ? { launcher } : {}),
		...(runtime === undefined ? {} : { runtimeFiles: runtime }),
	}
}

/**
 * Whether a record found for sandbox `id` at `stateRoot` names only that sandbox's own things:
 * its uid lock, its workspace lock and owner record, staging points inside its state root — so a
 * tampered record can never point teardown at another directory.
 */
export function hostClaimsBelongTo(
	claims: SandboxHostClaims,
	id: string,
	stateRoot: string,
): boolean {
	if (claims.id !== id || claims.stateRoot !== stateRoot) return false
	if (claims.identity && claims.identity.lockPath !== uidLockPath(stateRoot, claims.identity.uid)) {
		return false
	}
	const workspace = claims.workspace
	if (workspace) {
		if (claims.identity === undefined) return false
		if (
			!workspace.path.startsWith('/') ||
			workspace.path === '/' ||
			workspace.path.includes('/../')
		) {
			return false
		}
		if (isWithin(dirname(stateRoot), workspace.path)) return false
		if (workspace.recordPath !== `${stateRoot}/${OWNERSHIP_RECORD_NAME}`) return false
		if (workspace.lockPath !== workspaceLockPath(stateRoot, workspace.dev, workspace.ino))
			return false
	}
	// A sized workspace is the state root's own; a handed-over directory (a container's writable
	// `hostDir`) is outside the state directory, so a sandbox may hold both.
	const own = ephemeralWorkspacePath(stateRoot)
	if (claims.workspaceDisk !== undefined && claims.workspaceDisk !== own) return false
	if (claims.workspaceVolume !== undefined && claims.workspaceVolume !== own) return false
	if (!(claims.cgroupDirs ?? []).every((dir) => isSandboxCgroupDir(dir, id))) return false
	const staging = `${stateRoot}/${STAGING_DIR_NAME}`
	return claims.stagingMounts.every(
		(mount) => isWithin(mount, staging) && mount !== staging && !mount.includes('/../'),
	)
}
