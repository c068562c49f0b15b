/**
 * `checkpoint` / `rollback` on a sandbox of this machine, and the provider's store verbs, over
 * `checkpoint-store.ts`. A checkpoint pauses the sandbox's cgroups for the copy (`cgroup-freeze.ts`);
 * a rollback ends every process in the sandbox first (the agent's quiesce: commands, sessions and
 * detached executions all end), then, under a freeze, swaps a sized workspace's filesystem for a
 * clone of the checkpoint's image (`image-swap.ts`) or replaces the workspace's contents with the
 * checkpoint's. A sandbox whose workspace is the caller's directory takes no checkpoint.
 */
import {
	CONFIG_SITE,
	callSite,
	optionalFunction,
	optionalInteger,
	optionalSignal,
	optionalString,
	signalOfOptions,
} from '../../../contract/argument-validators.js'
import {
	CheckpointLimitError,
	CheckpointUnsupportedError,
	type SandboxCheckpoint,
	type SandboxCheckpointKind,
	type SandboxCheckpointOptions,
	type SandboxCheckpointStore,
	type SandboxCheckpointVerbs,
	type SandboxRollbackOptions,
} from '../../../contract/checkpoint.js'
import { SandboxDestroyedError } from '../../../contract/errors.js'
import type { SandboxRestoreHook } from '../../../contract/provider.js'
import type { Sandbox } from '../../../contract/sandbox.js'
import type { AgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import { freezeSandboxGroups } from '../cgroups/cgroup-freeze.js'
import type { MachineSandbox } from '../machine-sandbox.js'
import { resolveStateBase } from '../workspace/sandbox-directories.js'
import {
	captureCheckpoint,
	countCheckpoints,
	deleteCheckpoint,
	listCheckpoints,
	readCheckpoint,
	restoreCheckpoint,
} from './checkpoint-store.js'
import { swapToCheckpointImage } from './image-swap.js'
import { runRestoreHook } from './restore-hook.js'

/** The kinds sandboxes on this machine take: their workspace's files. */
export const MACHINE_CHECKPOINT_KINDS: readonly SandboxCheckpointKind[] = ['filesystem']

const LABEL_MAX_CHARS = 256

/** How many checkpoints a provider keeps unless its backend's `maxCheckpoints` says otherwise. */
export const DEFAULT_MAX_CHECKPOINTS = 256
/** The largest `maxCheckpoints` accepted: each checkpoint is a copy of a workspace on disk. */
const MAX_CHECKPOINTS_CEILING = 65_536

/** A backend's `maxCheckpoints`, checked (a positive integer), or the default. */
export function resolveMaxCheckpoints(value: unknown): number {
	return (
		optionalInteger(CONFIG_SITE, 'backend.maxCheckpoints', value, {
			min: 1,
			max: MAX_CHECKPOINTS_CEILING,
		}) ?? DEFAULT_MAX_CHECKPOINTS
	)
}

/** What the verbs need of one started sandbox. */
export interface CheckpointTarget {
	readonly stateDir: string
	/** The workspace's host path; undefined when it is the caller's (no checkpoint then). */
	readonly workspace: string | undefined
	/** The sandbox's `<sandbox>/` cgroup directories. */
	readonly cgroupDirs: readonly string[]
	/**
	 * The guest keeps written data in a page cache of its own (gVisor's sentry) that a freeze of its
	 * host processes does not put on disk: the agent's `flush` runs first, so what was written before
	 * the checkpoint was asked for is in it.
	 */
	readonly flushFirst?: boolean
	/** The provider's bound on the checkpoints its store keeps; default `DEFAULT_MAX_CHECKPOINTS`. */
	readonly maxCheckpoints?: number
}

/** The kind asked for (default `filesystem`, or the one kind a provider without it takes). */
function checkKind(
	operation: string,
	kind: unknown,
	supported: readonly SandboxCheckpointKind[],
): SandboxCheckpointKind {
	if (kind !== undefined && kind !== 'filesystem' && kind !== 'memory') {
		throw callSite(operation).refuse('options.kind', "'filesystem' or 'memory'", String(kind))
	}
	const only = supported.length === 1 ? supported[0] : undefined
	const wanted = kind ?? (only === 'memory' ? 'memory' : 'filesystem')
	if (!supported.includes(wanted))
		throw new CheckpointUnsupportedError(operation, wanted, supported)
	return wanted
}

/** A `checkpoint()` call's options, checked: the kind (one of `supported`) and the label. */
export function checkpointRequest(
	options: SandboxCheckpointOptions,
	supported: readonly SandboxCheckpointKind[],
): { readonly kind: SandboxCheckpointKind; readonly label: string | undefined } {
	const site = callSite('checkpoint')
	optionalSignal(site, 'options.signal', options.signal)
	const kind = checkKind('checkpoint', options.kind, supported)
	const label = optionalString(site, 'options.label', options.label)
	if (label !== undefined && label.length > LABEL_MAX_CHARS) {
		throw site.refuse('options.label', `at most ${LABEL_MAX_CHARS} characters`, `${label.length}`)
	}
	return { kind, label }
}

/** A store shared with a tier that takes memory checkpoints lists them too: not ours to use. */
function filesystemOnly(operation: string, checkpoint: SandboxCheckpoint): void {
	if (checkpoint.kind !== 'filesystem') {
		throw new CheckpointUnsupportedError(operation, checkpoint.kind, MACHINE_CHECKPOINT_KINDS)
	}
}

/** The id of `rollback`'s checkpoint argument (a checkpoint or its id). */
export function checkpointIdOf(checkpoint: unknown): string {
	if (typeof checkpoint === 'string' && checkpoint !== '') return checkpoint
	if (checkpoint !== null && typeof checkpoint === 'object') {
		const { id } = checkpoint as { readonly id?: unknown }
		if (typeof id === 'string' && id !== '') return id
	}
	throw callSite('rollback').refuse('checkpoint', 'a checkpoint or its id', typeof checkpoint)
}

function capturable(
	operation: string,
	target: CheckpointTarget | undefined,
): CheckpointTarget & { readonly workspace: string } {
	if (target === undefined) {
		throw new CheckpointUnsupportedError(operation, 'filesystem', [])
	}
	const { workspace } = target
	if (workspace !== undefined) return { ...target, workspace }
	throw new CheckpointUnsupportedError(
		operation,
		'filesystem',
		MACHINE_CHECKPOINT_KINDS,
		"the workspace is the caller's workingDirectory, which the provider does not snapshot",
	)
}

/**
 * Before any capture work: the store is bounded (captures in flight count), and only a delete
 * makes room (`CheckpointLimitError`).
 */
export async function assertRoomForCheckpoint(stateBase: string, limit: number): Promise<void> {
	if ((await countCheckpoints(stateBase)) >= limit) throw new CheckpointLimitError(limit)
}

/**
 * A runner of one checkpoint or rollback at a time per sandbox (a memory capture stops the guest,
 * a rollback replaces it): each waits for the one before it, whichever way that ended.
 */
export function oneAtATime(): <T>(run: () => Promise<T>) => Promise<T> {
	let queue: Promise<unknown> = Promise.resolve()
	return (run) => {
		const next = queue.then(run)
		queue = next.catch(() => undefined)
		return next
	}
}

/** `SandboxDestroyedError` for a checkpoint verb on a destroyed sandbox. */
export function assertLive(sandbox: Pick<AgentSandbox, 'id' | 'status'>, operation: string): void {
	if (sandbox.status === 'destroyed') throw new SandboxDestroyedError(sandbox.id, operation)
}

async function takeCheckpoint(
	sandbox: AgentSandbox,
	target: CheckpointTarget | undefined,
	options: SandboxCheckpointOptions = {},
): Promise<SandboxCheckpoint> {
	const { label } = checkpointRequest(options, target === undefined ? [] : MACHINE_CHECKPOINT_KINDS)
	const { workspace, stateDir, cgroupDirs, flushFirst, maxCheckpoints } = capturable(
		'checkpoint',
		target,
	)
	assertLive(sandbox, 'checkpoint')
	const stateBase = await resolveStateBase(stateDir)
	await assertRoomForCheckpoint(stateBase, maxCheckpoints ?? DEFAULT_MAX_CHECKPOINTS)
	if (flushFirst === true) await sandbox.flush(options.signal ? { signal: options.signal } : {})
	return captureCheckpoint({
		stateBase,
		sandboxId: sandbox.id,
		workspace,
		...(label === undefined ? {} : { label }),
		pause: () => freezeSandboxGroups(cgroupDirs),
		...(options.signal ? { signal: options.signal } : {}),
	})
}

async function rollBack(
	sandbox: MachineSandbox,
	target: CheckpointTarget | undefined,
	checkpoint: SandboxCheckpoint | string,
	options: SandboxRollbackOptions<Sandbox> = {},
): Promise<void> {
	const id = checkpointIdOf(checkpoint)
	const site = callSite('rollback')
	const signal = signalOfOptions(site, options)
	const onRestore = optionalFunction(site, 'options.onRestore', options.onRestore)
	const { workspace, stateDir, cgroupDirs } = capturable('rollback', target)
	assertLive(sandbox, 'rollback')
	const stateBase = await resolveStateBase(stateDir)
	// Refused (CheckpointNotFoundError, or another tier's kind) before any process is ended.
	const record = await readCheckpoint(stateBase, id)
	filesystemOnly('rollback', record)
	await sandbox.quiesce(signal ? { signal } : {})
	const thaw = await freezeSandboxGroups(cgroupDirs)
	try {
		const swap = {
			stateBase,
			checkpointId: id,
			workspace,
			cgroupDirs,
			...(signal ? { signal } : {}),
		}
		if (!(await swapToCheckpointImage(swap))) {
			await restoreCheckpoint(stateBase, id, workspace, signal)
		}
	} finally {
		await thaw()
	}
	await runRestoreHook(onRestore, sandbox, { checkpoint: record, operation: 'rollback' }, signal)
}

/**
 * The sandbox with `checkpoint` and `rollback` on it. Without a target (a provider that takes no
 * checkpoints) both refuse by name, so every sandbox of this machine has the verbs.
 */
export function withCheckpointVerbs(
	sandbox: AgentSandbox,
	target: CheckpointTarget | undefined,
): MachineSandbox {
	const verbs: Required<SandboxCheckpointVerbs<Sandbox>> = {
		checkpoint: (options) => takeCheckpoint(sandbox, target, options),
		rollback: (checkpoint, options) => rollBack(machine, target, checkpoint, options),
	}
	const machine: MachineSandbox = Object.assign(sandbox, verbs)
	return machine
}

/** A provider's store verbs over its state directory: it lists the kinds it takes. */
export function machineCheckpointStore(
	stateDir: string,
	kinds: readonly SandboxCheckpointKind[] = MACHINE_CHECKPOINT_KINDS,
): Required<SandboxCheckpointStore> {
	return {
		checkpointKinds: kinds,
		listCheckpoints: async (options = {}) => {
			signalOfOptions(callSite('listCheckpoints'), options)
			const all = await listCheckpoints(await resolveStateBase(stateDir))
			return all.filter((checkpoint) => kinds.includes(checkpoint.kind))
		},
		deleteCheckpoint: async (id, options = {}) => {
			signalOfOptions(callSite('deleteCheckpoint'), options)
			if (typeof id !== 'string') {
				throw callSite('deleteCheckpoint').refuse('id', 'a checkpoint id', typeof id)
			}
			await deleteCheckpoint(await resolveStateBase(stateDir), id)
		},
	}
}

/**
 * A fork's start: the checkpoint read (`CheckpointNotFoundError` before anything is claimed), and
 * the fill of the new sandbox's workspace once it exists, before its agent starts.
 */
export async function forkSource(
	stateDir: string,
	checkpointId: string,
): Promise<(workspace: string, signal?: AbortSignal) => Promise<void>> {
	const stateBase = await resolveStateBase(stateDir)
	filesystemOnly('create', await readCheckpoint(stateBase, checkpointId))
	return (workspace, signal) =>
		restoreCheckpoint(stateBase, checkpointId, workspace, signal, 'fork')
}

/**
 * `create()` of a sandbox that may be a fork: without `from` or `onRestore`, just `create()`. With
 * both, the checkpoint's record is read first (the hook's context; `CheckpointNotFoundError` before
 * anything starts), then the fork is created and handed to `onRestore` before this resolves.
 */
export async function createWithRestoreHook<S extends Sandbox>(
	stateDir: string,
	config: {
		readonly from?: SandboxCheckpoint | string
		readonly onRestore?: SandboxRestoreHook
		readonly signal?: AbortSignal
	},
	create: () => Promise<S>,
): Promise<S> {
	const { from, onRestore, signal } = config
	if (from === undefined || onRestore === undefined) return create()
	const id = typeof from === 'string' ? from : from.id
	const checkpoint = await readCheckpoint(await resolveStateBase(stateDir), id)
	const sandbox = await create()
	await runRestoreHook(onRestore, sandbox, { checkpoint, operation: 'fork' }, signal)
	return sandbox
}
