/**
 * `checkpoint` / `rollback` on a sandbox of this machine, and the provider's store verbs, over
 * `checkpoint-store.ts`. A checkpoint pauses the sandbox's cgroups for the copy (`cgroup-freeze.ts`);
 * a rollback ends every process in the sandbox first (the agent's quiesce: commands, sessions and
 * detached executions all end), then replaces the workspace's contents with the checkpoint's under
 * a freeze. A sandbox whose workspace is the caller's directory takes no checkpoint.
 */
import {
	callSite,
	optionalSignal,
	optionalString,
	signalOfOptions,
} from '../../../contract/argument-validators.js'
import {
	CheckpointUnsupportedError,
	type SandboxCheckpoint,
	type SandboxCheckpointCallOptions,
	type SandboxCheckpointKind,
	type SandboxCheckpointOptions,
	type SandboxCheckpointStore,
} from '../../../contract/checkpoint.js'
import { SandboxDestroyedError } from '../../../contract/errors.js'
import type { AgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import { freezeSandboxGroups } from '../cgroups/cgroup-freeze.js'
import type { MachineSandbox } from '../machine-sandbox.js'
import { resolveStateBase } from '../workspace/sandbox-directories.js'
import {
	captureCheckpoint,
	deleteCheckpoint,
	listCheckpoints,
	readCheckpoint,
	restoreCheckpoint,
} from './checkpoint-store.js'

/** The kinds sandboxes on this machine take: their workspace's files. */
export const MACHINE_CHECKPOINT_KINDS: readonly SandboxCheckpointKind[] = ['filesystem']

const LABEL_MAX_CHARS = 256

/** What the verbs need of one started sandbox. */
export interface CheckpointTarget {
	readonly stateDir: string
	/** The workspace's host path; undefined when it is the caller's (no checkpoint then). */
	readonly workspace: string | undefined
	/** The sandbox's `<sandbox>/` cgroup directories. */
	readonly cgroupDirs: readonly string[]
}

function checkKind(
	operation: string,
	kind: unknown,
	supported: readonly SandboxCheckpointKind[],
): SandboxCheckpointKind {
	if (kind === undefined || kind === 'filesystem') return 'filesystem'
	if (kind === 'memory') throw new CheckpointUnsupportedError(operation, 'memory', supported)
	throw callSite(operation).refuse('options.kind', "'filesystem' or 'memory'", String(kind))
}

function checkpointIdOf(checkpoint: unknown): string {
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

function assertLive(sandbox: AgentSandbox, operation: string): void {
	if (sandbox.status === 'destroyed') throw new SandboxDestroyedError(sandbox.id, operation)
}

async function takeCheckpoint(
	sandbox: AgentSandbox,
	target: CheckpointTarget | undefined,
	options: SandboxCheckpointOptions = {},
): Promise<SandboxCheckpoint> {
	const site = callSite('checkpoint')
	optionalSignal(site, 'options.signal', options.signal)
	checkKind('checkpoint', options.kind, target === undefined ? [] : MACHINE_CHECKPOINT_KINDS)
	const label = optionalString(site, 'options.label', options.label)
	if (label !== undefined && label.length > LABEL_MAX_CHARS) {
		throw site.refuse('options.label', `at most ${LABEL_MAX_CHARS} characters`, `${label.length}`)
	}
	const { workspace, stateDir, cgroupDirs } = capturable('checkpoint', target)
	assertLive(sandbox, 'checkpoint')
	return captureCheckpoint({
		stateBase: await resolveStateBase(stateDir),
		sandboxId: sandbox.id,
		workspace,
		...(label === undefined ? {} : { label }),
		pause: () => freezeSandboxGroups(cgroupDirs),
		...(options.signal ? { signal: options.signal } : {}),
	})
}

async function rollBack(
	sandbox: AgentSandbox,
	target: CheckpointTarget | undefined,
	checkpoint: SandboxCheckpoint | string,
	options: SandboxCheckpointCallOptions = {},
): Promise<void> {
	const id = checkpointIdOf(checkpoint)
	const signal = signalOfOptions(callSite('rollback'), options)
	const { workspace, stateDir, cgroupDirs } = capturable('rollback', target)
	assertLive(sandbox, 'rollback')
	const stateBase = await resolveStateBase(stateDir)
	// Refused (CheckpointNotFoundError) before any process is ended.
	await readCheckpoint(stateBase, id)
	await sandbox.quiesce(signal ? { signal } : {})
	const thaw = await freezeSandboxGroups(cgroupDirs)
	try {
		await restoreCheckpoint(stateBase, id, workspace, signal)
	} finally {
		await thaw()
	}
}

/**
 * The sandbox with `checkpoint` and `rollback` on it. Without a target (a provider that takes no
 * checkpoints) both refuse by name, so every sandbox of this machine has the verbs.
 */
export function withCheckpointVerbs(
	sandbox: AgentSandbox,
	target: CheckpointTarget | undefined,
): MachineSandbox {
	return Object.assign(sandbox, {
		checkpoint: (options?: SandboxCheckpointOptions) => takeCheckpoint(sandbox, target, options),
		rollback: (checkpoint: SandboxCheckpoint | string, options?: SandboxCheckpointCallOptions) =>
			rollBack(sandbox, target, checkpoint, options),
	})
}

/** A provider's store verbs over its state directory. */
export function machineCheckpointStore(stateDir: string): Required<SandboxCheckpointStore> {
	return {
		checkpointKinds: MACHINE_CHECKPOINT_KINDS,
		listCheckpoints: async (options = {}) => {
			signalOfOptions(callSite('listCheckpoints'), options)
			return listCheckpoints(await resolveStateBase(stateDir))
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
	await readCheckpoint(stateBase, checkpointId)
	return (workspace, signal) => restoreCheckpoint(stateBase, checkpointId, workspace, signal)
}
