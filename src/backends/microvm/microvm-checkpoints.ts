/**
 * Memory checkpoints of microVM sandboxes, in the machine layer's one store
 * (`checkpoint-store.ts`): a checkpoint's directory holds the guest's RAM and device state
 * (`memory.bin`), its root overlay and sized workspace disk as they were at that instant
 * (`qemu-vm-state.ts`), and `vm.json` — the device configuration a restore must repeat, and the
 * agent token inside that RAM image (mode 0600, like the image, which holds the token anyway). A
 * fork (`create({ from })`) and a rollback (the sandbox's QEMU replaced under the same id) are a
 * new QEMU loading that state with copies of those disks; the restored agent is then re-identified
 * (`restored`: new token, reseeded entropy, new boot id) before anyone else reaches it, and the
 * caller's `onRestore` runs on it (`restore-hook.ts`). A guest under a proxied egress
 * policy takes none: its proxy and in-guest capture helper are per sandbox.
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
import type { AgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import type { MachineSandbox } from '../machine/machine-sandbox.js'
import {
	captureMemoryCheckpoint,
	checkpointDir,
	readCheckpoint,
} from '../machine/snapshots/checkpoint-store.js'
import {
	assertLive,
	checkpointIdOf,
	checkpointRequest,
	oneAtATime,
} from '../machine/snapshots/checkpoint-verbs.js'
import { runRestoreHook } from '../machine/snapshots/restore-hook.js'
import { resolveStateBase } from '../machine/workspace/sandbox-directories.js'
import type { QemuGuest, VmRestoreSource } from './qemu-guest.js'
import { saveVmState, VM_STATE_FILES } from './qemu-vm-state.js'

/** The kinds the QEMU microVM tier takes. */
export const MICROVM_CHECKPOINT_KINDS: readonly SandboxCheckpointKind[] = ['memory']
const VM_RECORD = 'vm.json'

/** The device configuration a restore must repeat exactly. */
export interface VmConfig {
	readonly imageDir: string
	readonly accel: 'kvm' | 'tcg'
	readonly memoryMb: number
	readonly vcpus: number
	/** The sized workspace disk's size, when the guest has one. */
	readonly diskLimitMb?: number
	/**
	 * `allow-all`: the guest routes through QEMU's gateway, so a fork gets the same network (the
	 * VMM in a namespace of its own behind slirp4netns and the guard); absent: `deny-all`.
	 */
	readonly network?: 'allow-all'
}

/** A memory checkpoint's state, ready for a QEMU to load. */
export interface VmCheckpoint {
	readonly checkpoint: SandboxCheckpoint
	readonly config: VmConfig
	readonly source: VmRestoreSource
}

interface VmRecord extends VmConfig {
	readonly token: string
}

function parseVmRecord(text: string): VmRecord | undefined {
	try {
		const raw = JSON.parse(text) as Partial<Record<keyof VmRecord, unknown>>
		const { imageDir, accel, memoryMb, vcpus, diskLimitMb, network, token } = raw
		if (typeof imageDir !== 'string' || typeof token !== 'string') return undefined
		if (accel !== 'kvm' && accel !== 'tcg') return undefined
		if (typeof memoryMb !== 'number' || typeof vcpus !== 'number') return undefined
		if (diskLimitMb !== undefined && typeof diskLimitMb !== 'number') return undefined
		if (network !== undefined && network !== 'allow-all') return undefined
		return {
			imageDir,
			accel,
			memoryMb,
			vcpus,
			token,
			...(diskLimitMb === undefined ? {} : { diskLimitMb }),
			...(network === undefined ? {} : { network }),
		}
	} catch {
		return undefined
	}
}

/**
 * The memory checkpoint `id` of `stateDir`'s store, for `operation`: `CheckpointNotFoundError`, or
 * `CheckpointUnsupportedError` for one this tier did not take (another tier's kind in a shared store).
 */
export async function readVmCheckpoint(
	stateDir: string,
	id: string,
	operation: string,
): Promise<VmCheckpoint> {
	const stateBase = await resolveStateBase(stateDir)
	const checkpoint = await readCheckpoint(stateBase, id)
	const saved =
		checkpoint.kind === 'memory' ? await readVmState(checkpointDir(stateBase, id)) : undefined
	if (saved === undefined) {
		throw new CheckpointUnsupportedError(
			operation,
			checkpoint.kind,
			MICROVM_CHECKPOINT_KINDS,
			'that checkpoint was not taken of a microVM sandbox',
		)
	}
	return { checkpoint, ...saved }
}

/**
 * A guest's saved state in `dir` (a memory checkpoint's directory, a warm-start snapshot): its
 * device configuration and the files a QEMU loads; undefined without a well-formed record.
 */
export async function readVmState(
	dir: string,
): Promise<Pick<VmCheckpoint, 'config' | 'source'> | undefined> {
	const text = await readFile(join(dir, VM_RECORD), 'utf8').catch(() => undefined)
	const record = text === undefined ? undefined : parseVmRecord(text)
	if (record === undefined) return undefined
	const { token, ...config } = record
	return {
		config,
		source: {
			memoryFile: join(dir, VM_STATE_FILES.memory),
			rootOverlay: join(dir, VM_STATE_FILES.rootOverlay),
			workspaceDisk:
				config.diskLimitMb === undefined ? undefined : join(dir, VM_STATE_FILES.workspaceDisk),
			token,
		},
	}
}

/** Writes a running guest's state (paused for the instant) and its record into `dir`. */
export async function saveGuestState(
	guest: QemuGuest,
	config: VmConfig,
	dir: string,
	signal?: AbortSignal,
): Promise<void> {
	const machine = guest.machine
	const record: VmRecord = { ...config, token: machine.handle.token }
	await writeFile(join(dir, VM_RECORD), `${JSON.stringify(record)}\n`, { mode: 0o600 })
	await saveVmState(await machine.monitor(), machine.disks, dir, signal)
}

/** What the verbs need of one microVM sandbox. */
export interface MicroVMCheckpointTarget {
	readonly stateDir: string
	readonly guest: QemuGuest
	readonly config: VmConfig
	/** A proxied egress policy: no memory checkpoint (its proxy is the sandbox's own). */
	readonly proxied: boolean
}

function refuseProxied(operation: string, target: MicroVMCheckpointTarget): void {
	if (!target.proxied) return
	throw new CheckpointUnsupportedError(
		operation,
		'memory',
		MICROVM_CHECKPOINT_KINDS,
		"the sandbox's egress goes through a proxy of its own, which a memory image cannot carry; use egress 'deny-all'",
	)
}

/**
 * The sandbox with `checkpoint` (kind `memory`) and `rollback` (its QEMU replaced by one loaded
 * from the checkpoint, under the same id). One checkpoint or rollback at a time per sandbox.
 */
export function withMemoryCheckpointVerbs(
	sandbox: AgentSandbox,
	target: MicroVMCheckpointTarget,
): AgentSandbox & MachineSandbox {
	const serial = oneAtATime()
	const checkpoint = async (options: SandboxCheckpointOptions = {}) => {
		const { label } = checkpointRequest(options, MICROVM_CHECKPOINT_KINDS)
		refuseProxied('checkpoint', target)
		assertLive(sandbox, 'checkpoint')
		const { signal } = options
		return serial(async () =>
			captureMemoryCheckpoint({
				stateBase: await resolveStateBase(target.stateDir),
				sandboxId: sandbox.id,
				...(label === undefined ? {} : { label }),
				capture: (dir) => saveGuestState(target.guest, target.config, dir, signal),
				...(signal ? { signal } : {}),
			}),
		)
	}
	const rollback = async (
		given: SandboxCheckpoint | string,
		options: SandboxRollbackOptions<Sandbox> = {},
	) => {
		const id = checkpointIdOf(given)
		const site = callSite('rollback')
		const signal = signalOfOptions(site, options)
		const onRestore = optionalFunction(site, 'options.onRestore', options.onRestore)
		refuseProxied('rollback', target)
		assertLive(sandbox, 'rollback')
		const saved = await readVmCheckpoint(target.stateDir, id, 'rollback')
		refuseOtherDevices(saved.config, target.config)
		await serial(() => target.guest.replace(saved.source, signal))
		await runRestoreHook(
			onRestore,
			machine,
			{ checkpoint: saved.checkpoint, operation: 'rollback' },
			signal,
		)
	}
	const machine: AgentSandbox & MachineSandbox = Object.assign(sandbox, { checkpoint, rollback })
	return machine
}

/** A rollback keeps the sandbox's devices: a checkpoint of a differently shaped guest is refused. */
function refuseOtherDevices(saved: VmConfig, own: VmConfig): void {
	const same =
		saved.memoryMb === own.memoryMb &&
		saved.vcpus === own.vcpus &&
		saved.diskLimitMb === own.diskLimitMb &&
		saved.imageDir === own.imageDir &&
		saved.network === own.network
	if (same) return
	throw new CheckpointUnsupportedError(
		'rollback',
		'memory',
		MICROVM_CHECKPOINT_KINDS,
		'that checkpoint is of a guest with other memory, vCPUs, disk, image or network; fork it with create({ from }) instead',
	)
}
