/**
 * Whether something a local sandbox left in the state directory is garbage (pure): a sandbox's
 * state root, a claim lock, a runtime cache entry. A sandbox is reaped only when nobody can still
 * want it — its owner provably gone (the recorded pid absent, or present with another start time),
 * or for a kept-alive sandbox its lifetime over or its watchdog gone; a state root without any
 * record only once it is older than any create takes to write one and no live process mentions it;
 * a uid or workspace lock only once nothing of its sandbox runs or is grouped; cgroups of a
 * sandbox no record owns only once empty and old. The I/O shell is `reap-leftovers.ts`.
 */
import { AGENT_NODE_PREFIX, READABLE_SUFFIX, SPARE_SHELL_PREFIX } from '../launch/runtime-cache.js'

/**
 * A state root with no trustworthy record is reaped only after this long: a create writes its
 * record right after making the directory, and nothing is claimed or launched before that.
 */
export const UNRECORDED_GRACE_MS = 10 * 60_000
/** A runtime cache entry no record names is removed only once it is this old. */
export const RUNTIME_ENTRY_GRACE_MS = 10 * 60_000

export interface StateRootFacts {
	readonly nowMs: number
	/** Milliseconds since the state root was last modified. */
	readonly ageMs: number
	/** From its kept-alive descriptor, when it has one. */
	readonly keptAlive?: { readonly expiresAtMs: number; readonly launcherAlive: boolean }
	/** From its host-claims record: whether the recorded owner is alive; absent without a record. */
	readonly owner?: 'alive' | 'gone' | 'unrecorded'
	/**
	 * Without a record: whether a live process mentions the state root (its cwd, command line or
	 * environment — a sandbox of a version that kept no record for it).
	 */
	readonly mentioned?: boolean
}

/** Why the reaper took a sandbox's state root. */
export type ReapReason =
	/** A kept-alive sandbox past its lifetime (its watchdog has killed it, or is about to). */
	| 'expired'
	/** A kept-alive sandbox whose watchdog is gone before its time. */
	| 'watchdog-gone'
	/** The host process that created it is gone. */
	| 'owner-gone'
	/** A state root without a record, older than `UNRECORDED_GRACE_MS`. */
	| 'unrecorded'

/** Why the reaper left a state root alone. */
export type KeepReason = 'kept-alive' | 'owner-alive' | 'owner-unrecorded' | 'too-new' | 'in-use'

export type ReapDecision =
	| { readonly reap: true; readonly reason: ReapReason }
	| { readonly reap: false; readonly reason: KeepReason }

export function decideStateRoot(facts: StateRootFacts): ReapDecision {
	// A kept-alive sandbox outlives its creator by design: its own lifetime decides.
	if (facts.keptAlive) {
		if (facts.nowMs >= facts.keptAlive.expiresAtMs) return { reap: true, reason: 'expired' }
		if (!facts.keptAlive.launcherAlive) return { reap: true, reason: 'watchdog-gone' }
		return { reap: false, reason: 'kept-alive' }
	}
	switch (facts.owner) {
		case 'alive':
			return { reap: false, reason: 'owner-alive' }
		case 'gone':
			return { reap: true, reason: 'owner-gone' }
		case 'unrecorded':
			return { reap: false, reason: 'owner-unrecorded' }
		case undefined:
			if (facts.ageMs < UNRECORDED_GRACE_MS) return { reap: false, reason: 'too-new' }
			return facts.mentioned === true
				? { reap: false, reason: 'in-use' }
				: { reap: true, reason: 'unrecorded' }
	}
}

/** What still holds a sandbox's uid on this host (read by `lock-hold.ts`). */
export interface LockHoldFacts {
	/** Live (non-zombie) processes whose real, effective, saved or filesystem uid is the sandbox's. */
	readonly uidProcesses: number
	/** cgroup directories of the sandbox (recorded, or found by its name) that still exist. */
	readonly cgroups: number
}

/** Why a uid or workspace lock stays held although its sandbox is being undone. */
export type LockHoldReason = 'uid-process-running' | 'cgroup-exists'

export type LockReleaseDecision =
	| { readonly release: true }
	| { readonly release: false; readonly reason: LockHoldReason }

/**
 * Whether a sandbox's uid lock and workspace lock may be freed: never while a process of its uid
 * runs (it could write into the workspace, or act as the next sandbox given that uid) nor while a
 * cgroup of it exists (something may still be about to run in it). Zombies hold nothing.
 */
export function decideLockRelease(facts: LockHoldFacts): LockReleaseDecision {
	if (facts.uidProcesses > 0) return { release: false, reason: 'uid-process-running' }
	if (facts.cgroups > 0) return { release: false, reason: 'cgroup-exists' }
	return { release: true }
}

export interface LockFacts extends LockHoldFacts {
	/** Whether the state root the lock names still exists. */
	readonly stateRootExists: boolean
	/** Whether the process that took it is alive (pid + start time when recorded). */
	readonly takerAlive: boolean
}

/**
 * A lock is an orphan when the sandbox it names has no state root any more (its record, and with
 * it every way to undo the claim, is gone), the process that took it is gone too — a live
 * creator takes the uid lock a moment before it makes the state root — and nothing of the sandbox
 * still runs or is grouped on the host (`decideLockRelease`).
 */
export function lockIsOrphan(facts: LockFacts): boolean {
	return !facts.stateRootExists && !facts.takerAlive && decideLockRelease(facts).release
}

/** What the reaper knows of a top-level `namzu-sbx-<id>` cgroup. */
export interface SandboxCgroupFacts {
	/** A state root of this state directory that the reaper kept names the id. */
	readonly owned: boolean
	/** Any process in the groups or below them. */
	readonly populated: boolean
	/** Milliseconds since the youngest of the id's groups was made or changed. */
	readonly ageMs: number
}

/**
 * Whether the cgroups of a sandbox id are orphans: no record here owns them, nothing runs in
 * them, and they are older than any create takes between making its groups and starting a process
 * in them (a live sandbox of another state directory is populated, or younger than that).
 */
export function sandboxCgroupIsOrphan(facts: SandboxCgroupFacts): boolean {
	return !facts.owned && !facts.populated && facts.ageMs >= UNRECORDED_GRACE_MS
}

export interface RuntimeEntryFacts {
	readonly name: string
	readonly ageMs: number
	/** For a copy being written (`<name>.tmp-<pid>-<hex>`): whether its writer is alive. */
	readonly writerAlive?: boolean
}

/**
 * Whether a runtime cache entry can go: a half-written copy whose writer is gone, or a node copy
 * or agent bundle that no live record names, that is not the current one, and that nothing
 * changed for `RUNTIME_ENTRY_GRACE_MS`. `keep` holds entry names (the current copies and every
 * surviving record's). The shared empty file and anything unrecognised stay.
 */
export function runtimeEntryIsGarbage(
	entry: RuntimeEntryFacts,
	keep: ReadonlySet<string>,
): boolean {
	if (entry.writerAlive !== undefined) return !entry.writerAlive
	if (keep.has(entry.name)) return false
	const base = entry.name.endsWith(READABLE_SUFFIX)
		? entry.name.slice(0, -READABLE_SUFFIX.length)
		: entry.name
	const copy =
		(base.startsWith(AGENT_NODE_PREFIX) && base.length > AGENT_NODE_PREFIX.length) ||
		(base.startsWith(SPARE_SHELL_PREFIX) && base.length > SPARE_SHELL_PREFIX.length) ||
		/^agent-[0-9a-f-]+\.cjs$/.test(base)
	return copy && entry.ageMs >= RUNTIME_ENTRY_GRACE_MS
}

/** What the reaper knows of a partial directory: a checkpoint capture's or a snapshot build's. */
export interface PartialFacts {
	/** Whether the process it records as its writer lives; `undefined` when none is recorded. */
	readonly writerAlive: boolean | undefined
	readonly ageMs: number
}

/**
 * Whether a partial directory was abandoned: its recorded writer is gone, or, with none recorded
 * (killed before it wrote one, or a doomed entry that names none), it is `UNRECORDED_GRACE_MS` old.
 */
export function partialIsAbandoned(facts: PartialFacts): boolean {
	return facts.writerAlive === undefined ? facts.ageMs >= UNRECORDED_GRACE_MS : !facts.writerAlive
}
