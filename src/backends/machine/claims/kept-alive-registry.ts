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
	optionalObject,
	optionalSignal,
	optionalString,
	requireString,
} from '../../../contract/argument-validators.js'
import { STATE_DIR_PREFIX, sandboxRootFor } from '../workspace/sandbox-directories.js'
import { isProcessAlive } from './process-identity.js'
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
import { type SandboxRemains, tearDownFromRecord } from './teardown-from-record.js'

/** Where to look for kept-alive sandboxes (listing, reaping, destroying by id). */
export interface LocalSandboxRegistryOptions {
	/** The provider's `backend.stateDir`; default `os.tmpdir()`. */
	readonly stateDir?: string
	readonly signal?: AbortSignal
}

/** One kept-alive sandbox found in a state directory, with its state and record. */
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

/** What a kept-alive sandbox's descriptor says it left, for the one teardown. */
export function remainsOfDescriptor(descriptor: LocalSandboxDescriptor): SandboxRemains {
	return {
		stateRoot: descriptor.stateRoot,
		launcher: { pid: descriptor.pid, startTime: descriptor.pidStartTime },
		cgroupDirs: descriptor.cgroupDirs,
		...(descriptor.claims ? { claims: descriptor.claims } : {}),
		...(descriptor.callerOwnsWorkspace ? {} : { ephemeralWorkspace: descriptor.workspace }),
	}
}

/**
 * Tears down a kept-alive sandbox from any process (`teardown-from-record.ts`): its launcher only
 * if it is still the very process recorded, then cgroups, host claims and directories. Idempotent.
 */
export function destroyByDescriptor(descriptor: LocalSandboxDescriptor): Promise<void> {
	return tearDownFromRecord(remainsOfDescriptor(descriptor))
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
