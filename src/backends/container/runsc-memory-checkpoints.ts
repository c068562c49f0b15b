/**
 * Memory checkpoints under gVisor (`runtime: 'runsc'`), in the machine layer's one store
 * (`checkpoint-store.ts`): a checkpoint's directory holds `runsc checkpoint`'s image
 * (`runsc-image/`) and `runsc.json` — the uid the image's processes run as; the workspace's files
 * as they were at that instant are taken by the store the filesystem kind's way (a clone into the
 * copy-on-write volume, or of a sized workspace's image; a copy only where nothing clones). gVisor cannot save a socket bound through
 * `--host-uds`, so the agent first lets go of its listener (`release-listener`); the checkpoint
 * stops the container, and the sandbox is restored from the image it just wrote under its own
 * container id before `checkpoint()` resolves. A fork (`create({ from })`) is a new container
 * restored from the image into a sandbox of its own (id, runtime root, cgroups, workspace copy,
 * socket); a rollback replaces the sandbox's container with one restored from the image. Every
 * restored agent binds its socket again on SIGUSR2 and is re-identified (`restored`: reseeded
 * entropy, a new boot id) before anyone else reaches it; then the caller's `onRestore` runs.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { callSite, optionalFunction, signalOfOptions } from '../../contract/argument-validators.js'
import {
	CheckpointUnsupportedError,
	type SandboxCheckpoint,
	type SandboxCheckpointKind,
	type SandboxCheckpointOptions,
	type SandboxRollbackOptions,
} from '../../contract/checkpoint.js'
import type { Sandbox } from '../../contract/sandbox.js'
import type { CgroupOwner } from '../machine/cgroups/workload-cgroups.js'
import type { MachineSandbox } from '../machine/machine-sandbox.js'
import {
	captureMemoryCheckpoint,
	checkpointDir,
	readCheckpoint,
	restoreCheckpoint,
} from '../machine/snapshots/checkpoint-store.js'
import {
	assertLive,
	assertRoomForCheckpoint,
	checkpointIdOf,
	checkpointRequest,
	forkSource,
	oneAtATime,
} from '../machine/snapshots/checkpoint-verbs.js'
import { runRestoreHook } from '../machine/snapshots/restore-hook.js'
import { resolveStateBase } from '../machine/workspace/sandbox-directories.js'

/** What runsc takes: the workspace's files, or the whole sandbox with its processes. */
export const RUNSC_CHECKPOINT_KINDS: readonly SandboxCheckpointKind[] = ['filesystem', 'memory']

const IMAGE_DIR = 'runsc-image'
const RECORD = 'runsc.json'

/** A runsc memory checkpoint, ready for a restore. */
export interface RunscRestoreSource {
	readonly checkpoint: SandboxCheckpoint
	/** `runsc restore --image-path`. */
	readonly imagePath: string
	/**
	 * The uid and gid the image's processes run as inside gVisor: the restored sandbox's files are
	 * given to them, or its processes could not write their own workspace.
	 */
	readonly owner: CgroupOwner
	/** Makes `workspace` the checkpoint's files (owned by the workspace root's owner). */
	readonly fill: (workspace: string, signal?: AbortSignal) => Promise<void>
}

/** What the container's start serves for the memory verbs of one runsc sandbox. */
export interface RunscMemoryControl {
	/**
	 * Writes the sandbox's image into `<dir>/runsc-image`, hands its workspace to `takeWorkspace`
	 * while it is stopped, then resumes the sandbox from that image (its processes continue where
	 * they were).
	 */
	capture(
		dir: string,
		takeWorkspace: (workspace: string) => Promise<void>,
		signal?: AbortSignal,
	): Promise<void>
	/** Replaces the sandbox's container with one restored from `source` (same sandbox id). */
	rollback(source: RunscRestoreSource, signal?: AbortSignal): Promise<void>
}

/** Where a capture writes gVisor's image, inside the checkpoint's directory. */
export function runscImageDir(dir: string): string {
	return join(dir, IMAGE_DIR)
}

/** The record beside the image: whose uid the image's processes run as. */
export async function writeRunscRecord(dir: string, owner: CgroupOwner): Promise<void> {
	const record = { uid: owner.uid, gid: owner.gid }
	await writeFile(join(dir, RECORD), `${JSON.stringify(record)}\n`, { mode: 0o600 })
}

function ownerOf(text: string | undefined): CgroupOwner | undefined {
	if (text === undefined) return undefined
	try {
		const raw = JSON.parse(text) as { readonly uid?: unknown; readonly gid?: unknown }
		const { uid, gid } = raw
		if (!Number.isSafeInteger(uid) || !Number.isSafeInteger(gid)) return undefined
		return { uid: Number(uid), gid: Number(gid) }
	} catch {
		return undefined
	}
}

/**
 * The checkpoint `id` when it is a runsc memory checkpoint; `undefined` for a filesystem one;
 * `CheckpointNotFoundError`, or `CheckpointUnsupportedError` for another tier's memory kind.
 */
export async function readRunscCheckpoint(
	stateDir: string,
	id: string,
	operation: string,
): Promise<RunscRestoreSource | undefined> {
	const stateBase = await resolveStateBase(stateDir)
	const checkpoint = await readCheckpoint(stateBase, id)
	if (checkpoint.kind === 'filesystem') return undefined
	const dir = checkpointDir(stateBase, id)
	const owner = ownerOf(await readFile(join(dir, RECORD), 'utf8').catch(() => undefined))
	if (owner === undefined) {
		throw new CheckpointUnsupportedError(
			operation,
			'memory',
			RUNSC_CHECKPOINT_KINDS,
			'that memory checkpoint was not taken of a gVisor sandbox',
		)
	}
	return {
		checkpoint,
		imagePath: runscImageDir(dir),
		owner,
		fill: (workspace, signal) =>
			restoreCheckpoint(
				stateBase,
				id,
				workspace,
				signal,
				operation === 'create' ? 'fork' : 'rollback',
			),
	}
}

/** What the memory verbs need of one runsc sandbox. */
export interface RunscMemoryTarget {
	readonly stateDir: string
	readonly maxCheckpoints: number
	readonly control: RunscMemoryControl
}

/**
 * The sandbox with `checkpoint({ kind: 'memory' })` and the rollback of a memory checkpoint beside
 * its filesystem verbs. Every checkpoint and rollback of the sandbox runs one at a time.
 */
export function withRunscMemoryVerbs<S extends MachineSandbox & { readonly status: string }>(
	sandbox: S,
	target: RunscMemoryTarget,
): S {
	const filesystem = { checkpoint: sandbox.checkpoint, rollback: sandbox.rollback }
	const serial = oneAtATime()
	const checkpoint = async (options: SandboxCheckpointOptions = {}) => {
		const { kind, label } = checkpointRequest(options, RUNSC_CHECKPOINT_KINDS)
		if (kind === 'filesystem') return serial(() => filesystem.checkpoint(options))
		assertLive(sandbox, 'checkpoint')
		const { signal } = options
		const stateBase = await resolveStateBase(target.stateDir)
		await assertRoomForCheckpoint(stateBase, target.maxCheckpoints)
		return serial(async () => {
			// What the workload wrote is on disk before the workspace is copied beside the image.
			await sandbox.flush(signal ? { signal } : {})
			return captureMemoryCheckpoint({
				stateBase,
				sandboxId: sandbox.id,
				...(label === undefined ? {} : { label }),
				capture: (dir, takeWorkspace) => target.control.capture(dir, takeWorkspace, signal),
				...(signal ? { signal } : {}),
			})
		})
	}
	const rollback = async (
		given: SandboxCheckpoint | string,
		options: SandboxRollbackOptions<Sandbox> = {},
	) => {
		const id = checkpointIdOf(given)
		const site = callSite('rollback')
		const signal = signalOfOptions(site, options)
		const onRestore = optionalFunction(site, 'options.onRestore', options.onRestore)
		assertLive(sandbox, 'rollback')
		const source = await readRunscCheckpoint(target.stateDir, id, 'rollback')
		if (source === undefined) return serial(() => filesystem.rollback(given, options))
		await serial(() => target.control.rollback(source, signal))
		await runRestoreHook(
			onRestore,
			sandbox,
			{ checkpoint: source.checkpoint, operation: 'rollback' },
			signal,
		)
	}
	return Object.assign(sandbox, { checkpoint, rollback })
}

/** What a container fork starts from: a workspace fill, and under gVisor maybe a memory image. */
export interface ContainerForkSource {
	readonly fill: (workspace: string, signal?: AbortSignal) => Promise<void>
	readonly restore?: RunscRestoreSource
}

/**
 * The fork source of checkpoint `from`, read before anything is claimed: runsc restores a memory
 * checkpoint; every runtime fills a filesystem one, and another runtime refuses a memory one by
 * name (`CheckpointUnsupportedError`).
 */
export async function containerForkSource(
	backend: { readonly stateDir: string; readonly runtime: string },
	from: string,
): Promise<ContainerForkSource> {
	if (backend.runtime === 'runsc') {
		const restore = await readRunscCheckpoint(backend.stateDir, from, 'create')
		if (restore !== undefined) return { fill: restore.fill, restore }
	}
	return { fill: await forkSource(backend.stateDir, from) }
}
