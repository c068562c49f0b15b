/**
 * The kept-alive sandboxes of one state directory, as their descriptors record them: writing a
 * descriptor atomically, reading one back (only when it belongs where it was found), listing, the
 * teardown any process can run (launcher pid verified by its start time, then cgroups, then
 * directories), and the reaper that removes expired or dead ones. The thin I/O shell over
 * `sandbox-descriptor.ts`.
 */
import { chmod, readdir, readFile, realpath, rename, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
	callSite,
	optionalFunction,
	optionalObject,
	optionalSignal,
	optionalString,
	requireString,
} from '../../contract/argument-validators.js'
import { adoptSandboxCgroups } from './cgroup-limits.js'
import { LocalSandboxCleanupError } from './local-errors.js'
import { isProcessAlive } from './process-identity.js'
import { descendantPids, waitUntilGone } from './process-tree.js'
import { releaseHostClaims, removeStateRoot } from './release-host-claims.js'
import {
	DESCRIPTOR_FILE_NAME,
	descriptorBelongsTo,
	descriptorState,
	isLocalSandboxId,
	type LocalSandboxDescriptor,
	type LocalSandboxState,
	parseDescriptor,
	serializeDescriptor,
} from './sandbox-descriptor.js'
import { STATE_DIR_PREFIX, sandboxRootFor } from './sandbox-directories.js'
import { releaseWorkspaceDisk } from './workspace-disk.js'

/** Bound on waiting for killed sandbox processes to vanish. */
const KILL_WAIT_MS = 5_000

export interface LocalSandboxRegistryOptions {
	/** The provider's `backend.stateDir`; default `os.tmpdir()`. */
	readonly stateDir?: string
	readonly signal?: AbortSignal
}

export interface LocalSandboxListing {
	readonly id: string
	readonly state: LocalSandboxState
	readonly descriptor: LocalSandboxDescriptor
}

/** The options every registry verb takes, checked (`SandboxArgumentError` naming `method`). */
function checkRegistryOptions(method: string, options: unknown): Record<string, unknown> {
	const site = callSite(method)
	const given = optionalObject(site, 'options', options)
	optionalString(site, 'options.stateDir', given.stateDir, { nonEmpty: true })
	optionalSignal(site, 'options.signal', given.signal)
	return given
}

async function stateBase(stateDir: string | undefined): Promise<string | undefined> {
	try {
		return await realpath(stateDir ?? tmpdir())
	} catch {
		return undefined
	}
}

/** Writes `<stateRoot>/sandbox.json` (0600) through a temp sibling, so readers never see half. */
export async function writeDescriptor(descriptor: LocalSandboxDescriptor): Promise<void> {
	const target = join(descriptor.stateRoot, DESCRIPTOR_FILE_NAME)
	const temporary = `${target}.${process.pid}.tmp`
	await writeFile(temporary, serializeDescriptor(descriptor), { mode: 0o600 })
	await chmod(temporary, 0o600)
	await rename(temporary, target)
}

/** The descriptor of sandbox `id`, or undefined when there is none (or it is not trustworthy). */
export async function readDescriptor(
	id: string,
	options: LocalSandboxRegistryOptions = {},
): Promise<LocalSandboxDescriptor | undefined> {
	if (!isLocalSandboxId(id)) return undefined
	const base = await stateBase(options.stateDir)
	if (base === undefined) return undefined
	const root = sandboxRootFor(base, id)
	let text: string
	try {
		text = await readFile(join(root, DESCRIPTOR_FILE_NAME), 'utf8')
	} catch {
		return undefined
	}
	const descriptor = parseDescriptor(text)
	return descriptor && descriptorBelongsTo(descriptor, id, root) ? descriptor : undefined
}

export function stateOf(descriptor: LocalSandboxDescriptor, nowMs = Date.now()): LocalSandboxState {
	return descriptorState(
		descriptor,
		nowMs,
		isProcessAlive({ pid: descriptor.pid, startTime: descriptor.pidStartTime }),
	)
}

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL')
	} catch {
		// Already gone.
	}
}

/**
 * Tears down a kept-alive sandbox from any process: SIGKILLs the launcher (only if it is still the
 * very process recorded — pid plus start time) and its descendants, kills and removes the cgroups,
 * undoes its host claims (staging mounts, the sized workspace, a caller workspace given back to its
 * owners, the uid), removes the state directory (a caller-owned workspace is outside it and stays).
 * Idempotent.
 */
export async function destroyByDescriptor(descriptor: LocalSandboxDescriptor): Promise<void> {
	const identity = { pid: descriptor.pid, startTime: descriptor.pidStartTime }
	if (isProcessAlive(identity)) {
		const descendants = await descendantPids(descriptor.pid)
		// Re-check right before signalling: the recorded pid must still be the same process.
		if (isProcessAlive(identity)) killQuietly(descriptor.pid)
		for (const pid of descendants) killQuietly(pid)
		await waitUntilGone([descriptor.pid, ...descendants], KILL_WAIT_MS)
	}
	const failures: unknown[] = []
	await adoptSandboxCgroups(descriptor.cgroupDirs)
		.remove()
		.catch((error: unknown) => failures.push(error))
	const claims = descriptor.claims
	// Unconfined sandboxes keep no claims record: a sized workspace is found by its fixed layout.
	if (claims === undefined && !descriptor.callerOwnsWorkspace) {
		await releaseWorkspaceDisk(descriptor.stateRoot, descriptor.workspace).catch((error: unknown) =>
			failures.push(error),
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
		await removeStateRoot(descriptor.stateRoot).catch((error: unknown) => failures.push(error))
	}
	if (failures.length === 0) return
	const leftovers = failures.flatMap((failure) =>
		failure instanceof LocalSandboxCleanupError ? [...failure.leftovers] : [],
	)
	throw new LocalSandboxCleanupError(leftovers, { cause: failures[0] })
}

/** Every kept-alive sandbox recorded in the state directory, with its state, oldest first. */
export async function listLocalSandboxes(
	options: LocalSandboxRegistryOptions = {},
): Promise<LocalSandboxListing[]> {
	checkRegistryOptions('listLocalSandboxes', options)
	options.signal?.throwIfAborted()
	const base = await stateBase(options.stateDir)
	if (base === undefined) return []
	let names: string[]
	try {
		names = await readdir(base)
	} catch {
		return []
	}
	const listings: LocalSandboxListing[] = []
	for (const name of names) {
		if (!name.startsWith(STATE_DIR_PREFIX)) continue
		const id = name.slice(STATE_DIR_PREFIX.length)
		const descriptor = await readDescriptor(id, { stateDir: base })
		if (descriptor) listings.push({ id, state: stateOf(descriptor), descriptor })
	}
	return listings.sort((a, b) => a.descriptor.createdAtMs - b.descriptor.createdAtMs)
}

/**
 * Removes every recorded sandbox that is expired or dead (its watchdog already killed the
 * processes; this takes the cgroups and directories). Resolves with the reaped ids; a teardown
 * that fails is reported through `onError` and retried by the next reaper.
 */
export async function reapLocalSandboxes(
	options: LocalSandboxRegistryOptions & { readonly onError?: (error: unknown) => void } = {},
): Promise<string[]> {
	const given = checkRegistryOptions('reapLocalSandboxes', options)
	optionalFunction(callSite('reapLocalSandboxes'), 'options.onError', given.onError)
	const reaped: string[] = []
	for (const listing of await listLocalSandboxes(options)) {
		if (listing.state === 'running') continue
		options.signal?.throwIfAborted()
		try {
			await destroyByDescriptor(listing.descriptor)
			reaped.push(listing.id)
		} catch (error) {
			options.onError?.(error)
		}
	}
	return reaped
}

/**
 * Tears down kept-alive sandbox `id` without dialing its agent (it may be wedged or gone).
 * Resolves false when there is no such record.
 */
export async function destroyLocalSandbox(
	id: string,
	options: LocalSandboxRegistryOptions = {},
): Promise<boolean> {
	requireString(callSite('destroyLocalSandbox'), 'id', id)
	checkRegistryOptions('destroyLocalSandbox', options)
	options.signal?.throwIfAborted()
	const descriptor = await readDescriptor(id, options)
	if (descriptor === undefined) return false
	await destroyByDescriptor(descriptor)
	return true
}
