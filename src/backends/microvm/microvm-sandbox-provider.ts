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
import { createInstanceFleet, ownedAgentSandboxHandOut } from '../machine/fleet/instance-fleet.js'
import type { MachineSandbox } from '../machine/machine-sandbox.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import {
	createWithRestoreHook,
	machineCheckpointStore,
} from '../machine/snapshots/checkpoint-verbs.js'
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
import { locateMicroVMImage } from './microvm-image.js'
import { bootQemuGuest, MICROVM_WORKSPACE, type QemuGuest } from './qemu-guest.js'

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

/** The guest a spec asks for: booted, or (a fork) loaded from its checkpoint. */
async function startInstance(
	config: ResolvedMicroVMConfig,
	spec: MicroVMSpec,
	signal: AbortSignal,
	egressSeam: EgressTestSeam | undefined,
): Promise<MicroVMInstance> {
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
	const vmConfig: VmConfig = saved?.config ?? {
		imageDir: image.dir,
		accel: await resolveQemuAccel(config, image, signal),
		memoryMb: spec.memoryMb,
		vcpus: config.cpuLimit,
		...(spec.diskLimitMb === undefined ? {} : { diskLimitMb: spec.diskLimitMb }),
		...(spec.allowAll ? { network: 'allow-all' as const } : {}),
	}
	const id = `microvm-${randomBytes(6).toString('hex')}`
	const guest = await bootQemuGuest({
		sandboxId: id,
		qemuBinary: config.qemuBinary,
		image,
		accel: vmConfig.accel,
		memoryMb: vmConfig.memoryMb,
		vcpus: vmConfig.vcpus,
		callerEnv: spec.env,
		...(vmConfig.diskLimitMb === undefined ? {} : { workspaceDiskMb: vmConfig.diskLimitMb }),
		...(spec.egress === undefined ? {} : { egress: spec.egress }),
		...(vmConfig.network === 'allow-all' ? { allowAll: true } : {}),
		...(egressSeam === undefined ? {} : { egressSeam }),
		...(saved === undefined ? {} : { restore: saved.source }),
		bootTimeoutMs: config.bootTimeoutMs,
		signal,
	})
	return {
		id,
		transport: guest.transport,
		...(guest.egressDecisions ? { egressDecisions: guest.egressDecisions } : {}),
		rootDir: MICROVM_WORKSPACE,
		guest,
		vmConfig,
		hasExited: () => guest.vmm.exitStatus() !== undefined,
		release: () => guest.destroy(),
	}
}

/**
 * A provider of microVM sandboxes (`createSandboxProvider` with `tier: 'microvm'` and `service:
 * 'qemu'` builds the same). Contacts nothing until `create()`; egress `deny-all`, `static`,
 * `resolver` or `allow-all`.
 */
export function createMicroVMSandboxProvider(
	backend: MicroVMBackendConfig,
	defaults: SandboxProviderDefaults = {},
	hooks: {
		/**
		 * @internal Tests only: how the egress proxy resolves names and which CAs it trusts upstream.
		 * The private-range deny set still applies to whatever this resolves to.
		 */
		readonly egressTestSeam?: EgressTestSeam
	} = {},
): MicroVMSandboxProvider {
	const config = resolveMicroVMConfig(backend)
	checkProviderDefaults(defaults)
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const poolSpec = resolveMicroVMSpec({}, defaults)
	const handOut = ownedAgentSandboxHandOut<MicroVMSpec>('linux-namespace', outputBudget)
	const fleet = createInstanceFleet<MicroVMInstance, MicroVMSpec, MicroVMSandbox>({
		start: (spec, signal) => startInstance(config, spec, signal, hooks.egressTestSeam),
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
		// The VMM dies with its host (pdeathsig) and its directory is under the OS temp: nothing to reap.
		reap: () => Promise.resolve(),
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
