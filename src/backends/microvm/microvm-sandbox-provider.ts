/**
 * `createMicroVMSandboxProvider`: sandboxes that are QEMU guests booted from the `--vm` guest
 * image, each with its own kernel. Served through the machine layer's fleet (warm pool, close,
 * destroy) and the one `AgentSandbox`. Egress is `deny-all` (the guest's one NIC reaches nothing but
 * the host's forward to its agent), `static` / `resolver` through the machine layer's egress
 * proxy (`guest-egress.ts`), or `allow-all` through the machine layer's slirp4netns and
 * host-address guard around the VMM (`guest-open-network.ts`). `service: 'firecracker'` is refused at `create()`
 * (no Firecracker binary here; its API driver is `firecracker-api.ts`).
 */
import '../../contract/async-dispose.js'
import { randomBytes } from 'node:crypto'
import {
	CONFIG_SITE,
	optionalEnvironment,
	optionalInteger,
} from '../../contract/argument-validators.js'
import type { SandboxCheckpoint, SandboxCheckpointCallOptions } from '../../contract/checkpoint.js'
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxCreateConfig, SandboxProvider } from '../../contract/provider.js'
import { ExecOutputBudget } from '../../host/exec/exec-output-budget.js'
import type { AgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import {
	checkCreateConfig,
	checkFromCheckpoint,
	checkProviderDefaults,
	PORTABLE_CREATE_KEYS,
	type SandboxProviderDefaults,
	sandboxDefaultTimeoutMs,
	type UnlistedCreateKeys,
} from '../../provider-defaults.js'
import { collectLocalGarbage } from '../machine/claims/reap-leftovers.js'
import {
	createInstanceFleet,
	ownedAgentSandboxHandOut,
	reapReportingTo,
} from '../machine/fleet/instance-fleet.js'
import type { MachineSandbox } from '../machine/machine-sandbox.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import {
	createWithRestoreHook,
	machineCheckpointStore,
} from '../machine/snapshots/checkpoint-verbs.js'
import { discardCachedSnapshot } from '../machine/snapshots/snapshot-cache.js'
import {
	type LocalSandboxCreateConfig,
	type ProxiedEgress,
	resolveMachineEgress,
} from '../machine/spec/machine-sandbox-spec.js'
import {
	DEFAULT_MEMORY_LIMIT_MB,
	parseDiskLimitMb,
	refuseAboveHostMemory,
} from '../machine/spec/sandbox-limits.js'
import { resolveStateBase } from '../machine/workspace/sandbox-directories.js'
import { resolveQemuAccel } from './kvm-probe.js'
import {
	type MicroVMBackendConfig,
	type ResolvedMicroVMConfig,
	resolveMicroVMConfig,
} from './microvm-backend-config.js'
import {
	MICROVM_CHECKPOINT_KINDS,
	readVmCheckpoint,
	type VmConfig,
	withMemoryCheckpointVerbs,
} from './microvm-checkpoints.js'
import { MicroVMProviderClosedError, MicroVMServiceUnavailableError } from './microvm-errors.js'
import { locateMicroVMImage, type MicroVMImage } from './microvm-image.js'
import {
	bootQemuGuest,
	MICROVM_WORKSPACE,
	type QemuGuest,
	type VmRestoreSource,
} from './qemu-guest.js'
import {
	type SnapshotBootReason,
	snapshotBootReason,
	warmSnapshotState,
	withWarmSnapshot,
} from './snapshot-start.js'

/** Smallest guest RAM the agent (node) boots in. */
export const MIN_MICROVM_MEMORY_MB = 256
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `create()` options of the microVM tier. */
export interface MicroVMSandboxCreateConfig
	extends SandboxCreateConfig,
		Pick<LocalSandboxCreateConfig, 'egressCredentials' | 'onEgressDecision'> {
	/**
	 * The workspace as a disk of its own of this many MiB (writes past it fail with ENOSPC in the
	 * guest). Without it the workspace is on the guest's root disk, bounded by that disk's size.
	 */
	readonly diskLimitMb?: number
}

/** A microVM provider: `create()` takes the tier's options; it keeps memory checkpoints. */
export interface MicroVMSandboxProvider extends SandboxProvider {
	listCheckpoints(options?: SandboxCheckpointCallOptions): Promise<SandboxCheckpoint[]>
	deleteCheckpoint(id: string, options?: SandboxCheckpointCallOptions): Promise<void>
	create(config?: MicroVMSandboxCreateConfig): Promise<MicroVMSandbox>
}

/** A microVM sandbox: the machine layer's sandbox, memory checkpoints and rollback included. */
export type MicroVMSandbox = AgentSandbox & MachineSandbox

/** The `create()` keys this tier reads; any other is refused by name. */
export const MICROVM_CREATE_KEYS = [
	...PORTABLE_CREATE_KEYS,
	'diskLimitMb',
	'egressCredentials',
	'onEgressDecision',
] as const satisfies readonly (keyof MicroVMSandboxCreateConfig)[]
const microVMKeysListed: Record<
	UnlistedCreateKeys<MicroVMSandboxCreateConfig, typeof MICROVM_CREATE_KEYS>,
	never
> = {}
void microVMKeysListed

export interface MicroVMSpec {
	readonly memoryMb: number
	readonly diskLimitMb?: number
	readonly env: Readonly<Record<string, string>>
	readonly timeoutMs?: number
	/** `static` / `resolver`: the policy the sandbox's egress proxy enforces; absent ⇒ `deny-all`. */
	readonly egress?: ProxiedEgress
	/** `allow-all`: the VMM behind slirp4netns and the host-address guard. */
	readonly allowAll?: true
	/** A fork: the memory checkpoint's id (its RAM, disks and devices replace the fields above). */
	readonly from?: string
}

interface MicroVMInstance {
	readonly id: string
	readonly transport: QemuGuest['transport']
	readonly egressDecisions?: QemuGuest['egressDecisions']
	readonly rootDir: string
	readonly guest: QemuGuest
	readonly vmConfig: VmConfig
	hasExited(): boolean
	release(): Promise<void>
}

/** The spec a `create()` config asks for, over the provider defaults; refused before any boot. */
export function resolveMicroVMSpec(
	config: MicroVMSandboxCreateConfig,
	defaults: SandboxProviderDefaults,
): MicroVMSpec {
	const given: MicroVMSandboxCreateConfig = checkCreateConfig(
		config,
		MICROVM_CREATE_KEYS,
		MICROVM_CHECKPOINT_KINDS,
	)
	const from = checkFromCheckpoint(given.from, MICROVM_CHECKPOINT_KINDS)
	if (from !== undefined) refuseForkOverrides(given)
	if (given.workingDirectory !== undefined) {
		throw new SandboxConfigError(
			'workingDirectory',
			'the microVM tier has no host directory in the guest; use the ephemeral workspace',
		)
	}
	// The machine layer's one resolution (credentials and decisions only with a proxied kind).
	const egress = resolveMachineEgress(given, defaults, false)
	const env = optionalEnvironment(CONFIG_SITE, 'env', given.env) ?? {}
	for (const name of Object.keys(env)) {
		if (!ENV_NAME.test(name) || name.startsWith('NAMZU_')) {
			throw CONFIG_SITE.refuse(`env.${name}`, 'a shell variable name not starting NAMZU_', name)
		}
	}
	const requestedMb =
		optionalInteger(CONFIG_SITE, 'memoryLimitMb', given.memoryLimitMb, {
			min: MIN_MICROVM_MEMORY_MB,
		}) ?? defaults.defaultMemoryLimitMb
	refuseAboveHostMemory(requestedMb, given.memoryLimitMb === undefined)
	const memoryMb = requestedMb ?? DEFAULT_MEMORY_LIMIT_MB
	const diskLimitMb = parseDiskLimitMb(given.diskLimitMb)
	const timeoutMs = sandboxDefaultTimeoutMs(given, defaults)
	return {
		memoryMb,
		env,
		...(from === undefined ? {} : { from }),
		...(diskLimitMb === undefined ? {} : { diskLimitMb }),
		...(timeoutMs === undefined ? {} : { timeoutMs }),
		...(egress.proxiedEgress ? { egress: egress.proxiedEgress } : {}),
		...(egress.egress === 'allow-all' ? { allowAll: true as const } : {}),
	}
}

/** A fork is its checkpoint's guest: a setting that would change it is refused by name. */
function refuseForkOverrides(given: MicroVMSandboxCreateConfig): void {
	for (const key of [
		'memoryLimitMb',
		'diskLimitMb',
		'env',
		'egress',
		'egressCredentials',
	] as const) {
		if (given[key] === undefined) continue
		throw new SandboxConfigError(
			key,
			"a memory fork keeps its checkpoint's guest (memory, disk, environment, network); leave it out",
		)
	}
}

/** How one guest of a provider started, told to `onGuestStart`. */
export interface MicroVMGuestStart {
	readonly sandboxId: string
	/**
	 * `boot`: booted; `snapshot`: restored from the provider's warm-start snapshot
	 * (`startFromSnapshot`); `checkpoint`: a fork restored from a memory checkpoint.
	 */
	readonly start: 'boot' | 'snapshot' | 'checkpoint'
	/** Under `startFromSnapshot`: the snapshot's cache key (its directory's name). */
	readonly snapshotKey?: string
	/** `snapshot`: whether this start built it (booted the template guest and saved it first). */
	readonly snapshotBuilt?: boolean
	/** Under `startFromSnapshot`, why this start booted instead of restoring. */
	readonly bootReason?: SnapshotBootReason
	/** `restore-failed`: what failed (the snapshot was discarded; the next start rebuilds it). */
	readonly error?: unknown
}

/** What a start needs of its provider. */
interface StartContext {
	readonly config: ResolvedMicroVMConfig
	readonly egressSeam: EgressTestSeam | undefined
	readonly report: (event: MicroVMGuestStart) => void
}

/** The provider's side of each start: its config, and where it tells how a guest started. */
function startContext(config: ResolvedMicroVMConfig, hooks: MicroVMProviderHooks): StartContext {
	return {
		config,
		egressSeam: hooks.egressTestSeam,
		report: (event) => {
			try {
				hooks.onGuestStart?.(event)
			} catch (error) {
				hooks.onBackgroundError?.(error)
			}
		},
	}
}

/** The machine of a create that is not a fork. */
async function freshVmConfig(
	config: ResolvedMicroVMConfig,
	spec: MicroVMSpec,
	image: MicroVMImage,
	signal: AbortSignal,
): Promise<VmConfig> {
	return {
		imageDir: image.dir,
		accel: await resolveQemuAccel(config, image, signal),
		memoryMb: spec.memoryMb,
		vcpus: config.cpuLimit,
		...(spec.diskLimitMb === undefined ? {} : { diskLimitMb: spec.diskLimitMb }),
		...(spec.allowAll ? { network: 'allow-all' as const } : {}),
	}
}

/** The guest a spec asks for: booted, restored from the warm-start snapshot, or a fork. */
async function startInstance(
	context: StartContext,
	spec: MicroVMSpec,
	signal: AbortSignal,
): Promise<MicroVMInstance> {
	const { config, report } = context
	if (config.service === 'firecracker') {
		throw new MicroVMServiceUnavailableError(
			'firecracker',
			"no Firecracker binary on this host (its API driver is tested to its protocol boundary); use service 'qemu'",
		)
	}
	const saved =
		spec.from === undefined
			? undefined
			: await readVmCheckpoint(config.stateDir, spec.from, 'create')
	const image = await locateMicroVMImage(saved?.config.imageDir ?? config.imageDir)
	const id = `microvm-${randomBytes(6).toString('hex')}`
	const start = (vm: VmConfig, restore?: VmRestoreSource) =>
		bootInstance(context, { id, spec, image, vm, signal, ...(restore ? { restore } : {}) })
	if (saved !== undefined) {
		const instance = await start(saved.config, saved.source)
		report({ sandboxId: id, start: 'checkpoint' })
		return instance
	}
	const vm = await freshVmConfig(config, spec, image, signal)
	const bootReason = config.startFromSnapshot ? snapshotBootReason(spec) : undefined
	if (!config.startFromSnapshot || bootReason !== undefined) {
		const instance = await start(vm)
		report({ sandboxId: id, start: 'boot', ...(bootReason ? { bootReason } : {}) })
		return instance
	}
	// A failure to build the snapshot is the boot's own failure: it is not retried by booting.
	const restored = await withWarmSnapshot(config, image, vm, signal, async (snapshot) => {
		try {
			const instance = await start(vm, (await warmSnapshotState(snapshot)).source)
			return { snapshot, instance }
		} catch (error) {
			if (signal.aborted) throw error
			return { snapshot, error }
		}
	})
	const { key: snapshotKey, built } = restored.snapshot
	if (restored.instance !== undefined) {
		report({ sandboxId: id, start: 'snapshot', snapshotKey, snapshotBuilt: built })
		return restored.instance
	}
	// Told, not hidden: the snapshot goes (it may be damaged) and this create boots.
	await discardCachedSnapshot(await resolveStateBase(config.stateDir), snapshotKey)
	const instance = await start(vm)
	report({
		sandboxId: id,
		start: 'boot',
		snapshotKey,
		bootReason: 'restore-failed',
		error: restored.error,
	})
	return instance
}

/** One QEMU guest of sandbox `id`: booted, or restored from `restore`. */
async function bootInstance(
	context: StartContext,
	start: {
		readonly id: string
		readonly spec: MicroVMSpec
		readonly image: MicroVMImage
		readonly vm: VmConfig
		readonly signal: AbortSignal
		readonly restore?: VmRestoreSource
	},
): Promise<MicroVMInstance> {
	const { config, egressSeam } = context
	const { id, spec, vm, restore } = start
	const guest = await bootQemuGuest({
		sandboxId: id,
		qemuBinary: config.qemuBinary,
		image: start.image,
		accel: vm.accel,
		memoryMb: vm.memoryMb,
		vcpus: vm.vcpus,
		callerEnv: spec.env,
		stateDir: config.stateDir,
		...(vm.diskLimitMb === undefined ? {} : { workspaceDiskMb: vm.diskLimitMb }),
		...(spec.egress === undefined ? {} : { egress: spec.egress }),
		...(vm.network === 'allow-all' ? { allowAll: true } : {}),
		...(egressSeam === undefined ? {} : { egressSeam }),
		...(restore === undefined ? {} : { restore }),
		bootTimeoutMs: config.bootTimeoutMs,
		signal: start.signal,
	})
	return {
		id,
		transport: guest.transport,
		...(guest.egressDecisions ? { egressDecisions: guest.egressDecisions } : {}),
		rootDir: MICROVM_WORKSPACE,
		guest,
		vmConfig: vm,
		hasExited: () => guest.vmm.exitStatus() !== undefined,
		release: () => guest.destroy(),
	}
}

/** Callbacks for what a microVM provider does beside `create()`'s answer. */
export interface MicroVMProviderHooks {
	/** Told about background failures (warm-pool starts, the reaper). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/**
	 * Told how each guest started (booted, restored from the warm-start snapshot, forked), and
	 * under `startFromSnapshot` why one booted instead. Before `create()` resolves. Must not throw.
	 */
	readonly onGuestStart?: (event: MicroVMGuestStart) => void
	/** Told the sandbox id of each warm-pool guest once it is booted and ready to hand out. */
	readonly onWarmSandboxReady?: (id: string) => void
	/**
	 * @internal Tests only: how the egress proxy resolves names and which CAs it trusts upstream.
	 * The private-range deny set still applies to whatever this resolves to.
	 */
	readonly egressTestSeam?: EgressTestSeam
}

/**
 * A provider of microVM sandboxes (`createSandboxProvider` with `tier: 'microvm'` and `service:
 * 'qemu'` builds the same). Contacts nothing until `create()`; egress `deny-all`, `static`,
 * `resolver` or `allow-all`.
 */
export function createMicroVMSandboxProvider(
	backend: MicroVMBackendConfig,
	defaults: SandboxProviderDefaults = {},
	hooks: MicroVMProviderHooks = {},
): MicroVMSandboxProvider {
	const config = resolveMicroVMConfig(backend)
	checkProviderDefaults(defaults)
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const poolSpec = resolveMicroVMSpec({}, defaults)
	const handOut = ownedAgentSandboxHandOut<MicroVMSpec>('linux-namespace', outputBudget)
	const context = startContext(config, hooks)
	const fleet = createInstanceFleet<MicroVMInstance, MicroVMSpec, MicroVMSandbox>({
		start: (spec, signal) => startInstance(context, spec, signal),
		// A proxied guest is never pooled: its proxy carries its creator's policy and callback.
		...(config.warmPoolSize > 0 && poolSpec.egress === undefined
			? {
					pool: {
						size: config.warmPoolSize,
						spec: poolSpec,
						// A pooled guest booted with the defaults: it serves a create asking for nothing else.
						serves: (spec: MicroVMSpec) =>
							spec.from === undefined &&
							spec.memoryMb === poolSpec.memoryMb &&
							spec.diskLimitMb === undefined &&
							spec.egress === undefined &&
							spec.allowAll === poolSpec.allowAll &&
							Object.keys(spec.env).length === 0 &&
							spec.timeoutMs === poolSpec.timeoutMs,
					},
				}
			: {}),
		// Each VMM's directory is a state root recording its host, cgroups and VMM: what a dead
		// host's guests left in this state directory goes the way the other tiers' does.
		reap: reapReportingTo(hooks.onBackgroundError, (report) =>
			collectLocalGarbage({ stateDir: config.stateDir, ...report }),
		),
		handOut: (instance, spec, forget) => {
			const handed = handOut(instance, spec, forget)
			return {
				...handed,
				sandbox: withMemoryCheckpointVerbs(handed.sandbox, {
					stateDir: config.stateDir,
					guest: instance.guest,
					config: instance.vmConfig,
					proxied: spec.egress !== undefined,
				}),
			}
		},
		closedError: () => new MicroVMProviderClosedError(),
		...(hooks.onBackgroundError ? { onBackgroundError: hooks.onBackgroundError } : {}),
		...(hooks.onWarmSandboxReady ? { onWarmSandboxReady: hooks.onWarmSandboxReady } : {}),
	})
	const create = (createConfig: MicroVMSandboxCreateConfig = {}): Promise<MicroVMSandbox> => {
		let spec: MicroVMSpec
		try {
			spec = resolveMicroVMSpec(createConfig, defaults)
		} catch (error) {
			return Promise.reject(error)
		}
		return createWithRestoreHook(config.stateDir, createConfig, () =>
			fleet.create(spec, createConfig.signal),
		)
	}
	const close = () => fleet.close()
	return {
		id: `microvm-${config.service}`,
		name: `microVM (${config.service})`,
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		...machineCheckpointStore(config.stateDir, MICROVM_CHECKPOINT_KINDS),
		create,
		close,
		[Symbol.asyncDispose]: close,
	}
}
