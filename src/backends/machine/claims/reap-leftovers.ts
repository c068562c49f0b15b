/**
 * The machine layer's one reaper (the I/O shell over `reap-decision.ts`): walks a state directory
 * for what sandboxes of dead hosts left — state roots (workspaces included), their cgroups, mounts,
 * processes, uid and workspace locks, a caller workspace still handed to a sandbox uid — and undoes
 * each through the one teardown (`teardown-from-record.ts`); then the locks whose sandbox left
 * nothing else (and nothing of it runs or is grouped), then top-level `namzu-sbx-*` cgroups no record
 * owns, then old runtime copies of node and the agent that nothing uses, then the partial
 * directories of checkpoint captures whose capturing process died, then warm-start snapshots
 * partially built by a dead process or unused for a week. Entries of other
 * users (a shared /tmp) are never touched. Run by every provider on this machine (local, container)
 * in the background at its first `create()`, and on demand by `namzu-sandbox gc`.
 */

import type { Stats } from 'node:fs'
import { lstat, readdir, readFile, readlink, realpath, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { readIfPresent } from '../../../common/read-if-present.js'
import {
	callSite,
	optionalBoolean,
	optionalFunction,
	optionalObject,
	optionalSignal,
	optionalString,
} from '../../../contract/argument-validators.js'
import { agentBundlePath } from '../../../host/sandbox/agent-bundle-path.js'
import { adoptSandboxCgroups } from '../cgroups/cgroup-limits.js'
import { topLevelSandboxCgroups, youngestAgeMs } from '../cgroups/sandbox-cgroup-scan.js'
import {
	agentBundleName,
	agentNodeName,
	HOST_SHELL_PATH,
	READABLE_SUFFIX,
	runtimeDirName,
	spareShellName,
	temporaryWriter,
} from '../launch/runtime-cache.js'
import { collectVolumeGarbage } from '../snapshots/cow-volume.js'
import { abandonedPartialCheckpoints } from '../snapshots/partial-checkpoints.js'
import { staleCachedSnapshots } from '../snapshots/snapshot-cache.js'
import { STATE_DIR_PREFIX, sandboxRootFor } from '../workspace/sandbox-directories.js'
import { CLAIMS_DIR_NAME, releaseLock } from './claim-locks.js'
import { ephemeralWorkspacePath, type SandboxHostClaims } from './host-claims.js'
import { readDescriptor, remainsOfDescriptor } from './kept-alive-registry.js'
import { lockHoldFacts } from './lock-hold.js'
import { isProcessAlive } from './process-identity.js'
import {
	decideStateRoot,
	lockIsOrphan,
	type ReapReason,
	runtimeEntryIsGarbage,
	type StateRootFacts,
	sandboxCgroupIsOrphan,
	UNRECORDED_GRACE_MS,
} from './reap-decision.js'
import { readHostClaims } from './release-host-claims.js'
import { isLocalSandboxId } from './sandbox-descriptor.js'
import { type SandboxRemains, tearDownFromRecord } from './teardown-from-record.js'

/** Where `collectLocalGarbage` looks, and whether it only lists. */
export interface LocalGarbageOptions {
	/** The provider's `backend.stateDir`; default `os.tmpdir()`. */
	readonly stateDir?: string
	/** List what would be reaped; change nothing. */
	readonly dryRun?: boolean
	/**
	 * The node binary whose runtime copy stays although no sandbox uses it now (the next create
	 * would copy it again); default `process.execPath`.
	 */
	readonly nodePath?: string
	readonly signal?: AbortSignal
	/** Told each teardown that failed (it is retried by the next reaper). Must not throw. */
	readonly onError?: (error: unknown) => void
}

/** One sandbox the reaper removed (or would remove), and why. */
export interface ReapedLocalSandbox {
	readonly id: string
	readonly stateRoot: string
	readonly reason: ReapReason
}

/** What a reaper removed (or, with `dryRun`, would remove). */
export interface LocalGarbageReport {
	readonly sandboxes: readonly ReapedLocalSandbox[]
	/** Lock files under `namzu-claims/` whose sandbox left nothing else. */
	readonly locks: readonly string[]
	/** Top-level `namzu-sbx-<id>` cgroup directories no record owns (empty, old). */
	readonly cgroups: readonly string[]
	/** Runtime cache entries (old copies of node and the agent bundle). */
	readonly runtimeFiles: readonly string[]
	/** `namzu-checkpoints/.partial-<id>` directories of captures whose capturing process died. */
	readonly partialCheckpoints: readonly string[]
	/**
	 * The copy-on-write volume's leftovers (`namzu-cow/`): registrations of users that are gone,
	 * contents no user or checkpoint names, and the mount (and image) once nothing uses it.
	 */
	readonly checkpointVolume: readonly string[]
	/**
	 * `namzu-snapshot-cache/` (warm-start snapshots): partial builds whose builder is gone, and
	 * entries nothing started from for a week.
	 */
	readonly warmSnapshots: readonly string[]
	/** Sandbox ids whose teardown failed (each also told to `onError`). */
	readonly failed: readonly string[]
}

function checkOptions(options: unknown): void {
	const site = callSite('collectLocalGarbage')
	const given = optionalObject(site, 'options', options)
	optionalString(site, 'options.stateDir', given.stateDir, { nonEmpty: true })
	optionalBoolean(site, 'options.dryRun', given.dryRun)
	optionalString(site, 'options.nodePath', given.nodePath, { nonEmpty: true })
	optionalSignal(site, 'options.signal', given.signal)
	optionalFunction(site, 'options.onError', given.onError)
}

const ownUid = () => process.getuid?.() ?? 0

/** Our own entry's stat, or undefined (missing, a symlink, or another user's). */
async function ownEntry(path: string): Promise<Stats | undefined> {
	try {
		const info = await lstat(path)
		return info.uid === ownUid() && !info.isSymbolicLink() ? info : undefined
	} catch {
		return undefined
	}
}

async function listOwn(dir: string): Promise<string[]> {
	if ((await ownEntry(dir))?.isDirectory() !== true) return []
	try {
		return await readdir(dir)
	} catch {
		return []
	}
}

function pidAlive(pid: number): boolean {
	try {
		process.kill(pid, 0)
		return true
	} catch (error) {
		return (error as NodeJS.ErrnoException).code === 'EPERM'
	}
}

/** Whether any live process has its cwd under `root` or names it in its command line or env. */
async function mentionedByAProcess(root: string): Promise<boolean> {
	for (const entry of await readdir('/proc').catch(() => [])) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '')
		if (cwd === root || cwd.startsWith(`${root}/`)) return true
		for (const file of ['cmdline', 'environ']) {
			if ((await readIfPresent(`/proc/${entry}/${file}`, 'latin1'))?.includes(root)) return true
		}
	}
	return false
}

interface StateRootLook {
	readonly facts: StateRootFacts
	readonly remains: SandboxRemains
	readonly claims?: SandboxHostClaims
}

async function lookAt(id: string, root: string, base: string, nowMs: number) {
	const info = await ownEntry(root)
	if (info?.isDirectory() !== true) return undefined
	const descriptor = await readDescriptor(id, { stateDir: base })
	const claims = descriptor?.claims ?? (await readHostClaims(id, root))
	const owner =
		claims === undefined
			? undefined
			: claims.owner === undefined
				? 'unrecorded'
				: isProcessAlive(claims.owner)
					? 'alive'
					: 'gone'
	const facts: StateRootFacts = {
		nowMs,
		ageMs: nowMs - info.mtimeMs,
		...(descriptor
			? {
					keptAlive: {
						expiresAtMs: descriptor.expiresAtMs,
						launcherAlive: isProcessAlive({
							pid: descriptor.pid,
							startTime: descriptor.pidStartTime,
						}),
					},
				}
			: {}),
		...(owner === undefined ? {} : { owner }),
		...(claims === undefined && nowMs - info.mtimeMs >= UNRECORDED_GRACE_MS
			? { mentioned: await mentionedByAProcess(root) }
			: {}),
	}
	const remains: SandboxRemains = descriptor
		? remainsOfDescriptor(descriptor)
		: {
				stateRoot: root,
				...(claims?.launcher ? { launcher: claims.launcher } : {}),
				cgroupDirs: claims?.cgroupDirs ?? [],
				...(claims ? { claims } : { ephemeralWorkspace: ephemeralWorkspacePath(root) }),
			}
	const look: StateRootLook = { facts, remains, ...(claims ? { claims } : {}) }
	return look
}

interface LockEntry {
	readonly path: string
	readonly name: string
	readonly id: string
	readonly takerAlive: boolean
}

async function readLockEntries(dir: string): Promise<LockEntry[]> {
	const entries: LockEntry[] = []
	for (const name of await listOwn(dir)) {
		if (!name.endsWith('.lock')) continue
		const path = join(dir, name)
		let raw: unknown
		try {
			raw = JSON.parse(await readFile(path, 'utf8'))
		} catch {
			// Being written (taken with O_EXCL, then filled) or not ours to judge.
			continue
		}
		if (typeof raw !== 'object' || raw === null) continue
		const id: unknown = Reflect.get(raw, 'id')
		const pid: unknown = Reflect.get(raw, 'pid')
		const startTime: unknown = Reflect.get(raw, 'pidStartTime')
		if (typeof id !== 'string' || !isLocalSandboxId(id)) continue
		if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) continue
		const takerAlive =
			typeof startTime === 'string' ? isProcessAlive({ pid, startTime }) : pidAlive(pid)
		entries.push({ path, name, id, takerAlive })
	}
	return entries
}

/** The uid a sandbox's uid lock names (`uid-<uid>.lock`); its workspace lock names none. */
function uidOfLocks(entries: readonly LockEntry[], id: string): number | undefined {
	for (const entry of entries) {
		const uid = /^uid-(\d+)\.lock$/.exec(entry.name)?.[1]
		if (entry.id === id && uid !== undefined) return Number(uid)
	}
	return undefined
}

async function orphanLocks(base: string, dryRun: boolean): Promise<string[]> {
	const entries = await readLockEntries(join(base, CLAIMS_DIR_NAME))
	const removed: string[] = []
	for (const entry of entries) {
		const stateRootExists = (await ownEntry(sandboxRootFor(base, entry.id))) !== undefined
		if (stateRootExists || entry.takerAlive) continue
		const hold = await lockHoldFacts(entry.id, uidOfLocks(entries, entry.id), [])
		if (!lockIsOrphan({ stateRootExists, takerAlive: entry.takerAlive, ...hold })) continue
		if (!dryRun) await releaseLock(entry.path, entry.id)
		removed.push(entry.path)
	}
	return removed
}

/**
 * Top-level `namzu-sbx-<id>` cgroups that no state root kept here names, empty and old: a host
 * that died between making a group and recording it, a runtime's group the record never named.
 */
async function orphanCgroups(
	owned: ReadonlySet<string>,
	nowMs: number,
	dryRun: boolean,
	onError: ((error: unknown) => void) | undefined,
): Promise<string[]> {
	const removed: string[] = []
	for (const [id, dirs] of await topLevelSandboxCgroups()) {
		const groups = adoptSandboxCgroups(dirs)
		const facts = {
			owned: owned.has(id),
			populated: (await groups.pids()).length > 0,
			ageMs: await youngestAgeMs(dirs, nowMs),
		}
		if (!sandboxCgroupIsOrphan(facts)) continue
		try {
			if (!dryRun) await groups.remove()
			removed.push(...dirs)
		} catch (error) {
			// Left for the next reaper; the report names only what went.
			onError?.(error)
		}
	}
	return removed
}

async function currentRuntimeNames(nodePath: string): Promise<Set<string>> {
	const keep = new Set<string>()
	const add = async (path: string, name: (info: Stats) => string) => {
		try {
			keep.add(name(await stat(path)))
		} catch {
			// No such source: nothing current to keep for it.
		}
	}
	await add(nodePath, (info) => agentNodeName(info))
	await add(agentBundlePath(), (info) => agentBundleName(info))
	await add(HOST_SHELL_PATH, (info) => spareShellName(info))
	for (const name of [...keep]) keep.add(`${name}${READABLE_SUFFIX}`)
	return keep
}

async function staleRuntimeFiles(
	base: string,
	keep: ReadonlySet<string>,
	nowMs: number,
	dryRun: boolean,
): Promise<string[]> {
	const dir = join(base, runtimeDirName())
	const removed: string[] = []
	for (const name of await listOwn(dir)) {
		const path = join(dir, name)
		const info = await ownEntry(path)
		if (info?.isFile() !== true) continue
		const writer = temporaryWriter(name)
		const entry = {
			name,
			ageMs: nowMs - info.mtimeMs,
			...(writer === undefined ? {} : { writerAlive: pidAlive(writer) }),
		}
		if (!runtimeEntryIsGarbage(entry, keep)) continue
		if (!dryRun) await rm(path, { force: true })
		removed.push(path)
	}
	return removed
}

/**
 * Reaps what sandboxes of dead hosts left in a state directory (see the file comment): a sandbox
 * only once its owner is provably gone, a kept-alive one only once its lifetime is over or its
 * watchdog is gone. Sandboxes of live hosts, and live kept-alive ones, are never touched.
 */
export async function collectLocalGarbage(
	options: LocalGarbageOptions = {},
): Promise<LocalGarbageReport> {
	checkOptions(options)
	const { signal } = options
	signal?.throwIfAborted()
	const dryRun = options.dryRun === true
	let base: string
	try {
		base = await realpath(options.stateDir ?? tmpdir())
	} catch {
		return {
			sandboxes: [],
			locks: [],
			cgroups: [],
			runtimeFiles: [],
			partialCheckpoints: [],
			checkpointVolume: [],
			warmSnapshots: [],
			failed: [],
		}
	}
	const nowMs = Date.now()
	const sandboxes: ReapedLocalSandbox[] = []
	const failed: string[] = []
	// Sandboxes whose state root stays: their groups are theirs, never orphans.
	const owned = new Set<string>()
	const keep = await currentRuntimeNames(options.nodePath ?? process.execPath)
	for (const name of await readdir(base).catch(() => [])) {
		if (!name.startsWith(STATE_DIR_PREFIX)) continue
		const id = name.slice(STATE_DIR_PREFIX.length)
		if (!isLocalSandboxId(id)) continue
		signal?.throwIfAborted()
		const root = sandboxRootFor(base, id)
		const look = await lookAt(id, root, base, nowMs)
		if (look === undefined) continue
		const decision = decideStateRoot(look.facts)
		if (!decision.reap) {
			owned.add(id)
			for (const file of look.claims?.runtimeFiles ?? []) keep.add(basename(file))
			continue
		}
		try {
			if (!dryRun) await tearDownFromRecord(look.remains)
			sandboxes.push({ id, stateRoot: root, reason: decision.reason })
			if (dryRun) owned.add(id)
		} catch (error) {
			owned.add(id)
			failed.push(id)
			for (const file of look.claims?.runtimeFiles ?? []) keep.add(basename(file))
			options.onError?.(error)
		}
	}
	signal?.throwIfAborted()
	const locks = await orphanLocks(base, dryRun)
	const cgroups = await orphanCgroups(owned, nowMs, dryRun, options.onError)
	const runtimeFiles = await staleRuntimeFiles(base, keep, nowMs, dryRun)
	const partialCheckpoints = await abandonedPartialCheckpoints(base, nowMs, dryRun)
	const checkpointVolume = await collectVolumeGarbage(
		base,
		async (id) => (await ownEntry(sandboxRootFor(base, id))) !== undefined,
		dryRun,
	).catch((error: unknown) => {
		options.onError?.(error)
		return [] as string[]
	})
	const warmSnapshots = await staleCachedSnapshots(base, nowMs, dryRun)
	return {
		sandboxes,
		locks,
		cgroups,
		runtimeFiles,
		partialCheckpoints,
		checkpointVolume,
		warmSnapshots,
		failed,
	}
}

/**
 * The reaper, answering with the ids of the sandboxes it removed (expired or watchdog-less
 * kept-alive ones, and every sandbox whose host is gone); see `collectLocalGarbage`.
 */
export async function reapLocalSandboxes(
	options: {
		readonly stateDir?: string
		readonly signal?: AbortSignal
		readonly onError?: (error: unknown) => void
	} = {},
): Promise<string[]> {
	const site = callSite('reapLocalSandboxes')
	const given = optionalObject(site, 'options', options)
	optionalString(site, 'options.stateDir', given.stateDir, { nonEmpty: true })
	optionalSignal(site, 'options.signal', given.signal)
	optionalFunction(site, 'options.onError', given.onError)
	const report = await collectLocalGarbage(options)
	return report.sandboxes.map((sandbox) => sandbox.id)
}
