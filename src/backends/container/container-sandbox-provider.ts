/**
 * The container tier's `SandboxProvider`: every sandbox is the host's one `AgentSandbox` over the
 * same agent, started in an OCI container by `startContainerInstance`, optionally served from a
 * warm pool of started and probed containers (the machine layer's `WarmPool`). `close()` takes down
 * every sandbox still alive, every start in flight and the pool. What sandboxes of dead hosts left
 * in the state directory is reaped once in the background by the machine layer's reaper (a
 * container sandbox's record is the same record).
 */

import '../../contract/async-dispose.js'
import { isRecord } from '../../common/is-record.js'
import {
	CONFIG_SITE,
	optionalFunction,
	optionalObject,
} from '../../contract/argument-validators.js'
import type {
	SandboxCheckpoint,
	SandboxCheckpointCallOptions,
	SandboxCheckpointKind,
} from '../../contract/checkpoint.js'
import type { SandboxProvider } from '../../contract/provider.js'
import { ExecOutputBudget } from '../../host/exec/exec-output-budget.js'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import { withMigrationWarmth } from '../machine/cgroups/migration-warmth.js'
import { collectLocalGarbage } from '../machine/claims/reap-leftovers.js'
import {
	createInstanceFleet,
	type HandedOut,
	ownedAgentSandboxHandOut,
	reapReportingTo,
} from '../machine/fleet/instance-fleet.js'
import type { MachineSandbox } from '../machine/machine-sandbox.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import { seccompArchOf } from '../machine/seccomp/seccomp-filter.js'
import {
	createWithRestoreHook,
	MACHINE_CHECKPOINT_KINDS,
	machineCheckpointStore,
	withCheckpointVerbs,
} from '../machine/snapshots/checkpoint-verbs.js'
import {
	type ContainerBackendConfig,
	type ResolvedContainerBackendConfig,
	resolveContainerBackendConfig,
} from './container-backend-config.js'
import {
	ContainerProviderClosedError,
	ContainerSandboxLayoutValidationError,
} from './container-errors.js'
import { type ContainerImage, resolveContainerImage } from './container-image.js'
import type { ContainerInstance, ContainerInstanceContext } from './container-instance.js'
import {
	type ContainerSandboxLayout,
	layoutMounts,
	type ResolvedContainerSandboxLayout,
	resolveLayout,
} from './container-layout.js'
import {
	type ContainerSandboxCreateConfig,
	type ContainerSandboxSpec,
	canServeFromContainerPool,
	resolveContainerSandboxSpec,
} from './container-sandbox-spec.js'
import { startContainerInstance } from './container-start.js'
import { createDockerSandboxProvider } from './docker/docker-sandbox-provider.js'
import { RUNSC_CHECKPOINT_KINDS, withRunscMemoryVerbs } from './runsc-memory-checkpoints.js'

/** A container sandbox: the machine layer's one sandbox type (one agent serves every tier). */
export type ContainerSandbox = MachineSandbox

/** Callbacks for what the container provider does in the background. */
export interface ContainerProviderHooks {
	/** Told about background failures (warm-pool starts and releases, the reaper). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/** Told the id of each warm-pool sandbox once it is started, probed and ready. Must not throw. */
	readonly onWarmSandboxReady?: (id: string) => void
	/**
	 * @internal Tests only: how the egress proxy resolves names and which CAs it trusts upstream.
	 * The private-range deny set still applies to whatever this resolves to.
	 */
	readonly egressTestSeam?: EgressTestSeam
}

export interface ContainerSandboxProvider extends SandboxProvider {
	listCheckpoints(options?: SandboxCheckpointCallOptions): Promise<SandboxCheckpoint[]>
	deleteCheckpoint(id: string, options?: SandboxCheckpointCallOptions): Promise<void>
	create(config?: ContainerSandboxCreateConfig): Promise<ContainerSandbox>
}

/** `SandboxProvider.id` = `namzu-container-<runtime>`. */
export function containerProviderId(runtime: string): string {
	return `namzu-container-${runtime}`
}

/** `SandboxProvider.name` = `@namzu/sandbox:container:<runtime>`. */
export function containerProviderName(runtime: string): string {
	return `@namzu/sandbox:container:${runtime}`
}

/** What the tier itself refuses of a valid layout, every reason at once. */
export function containerLayoutRefusals(
	layout: ResolvedContainerSandboxLayout,
	warmPoolSize: number,
): string[] {
	const reasons: string[] = []
	const entries = layoutMounts(layout)
	for (const entry of entries) {
		if (entry.mount.source.type === 'azureFileShare') {
			reasons.push(
				`${entry.field}.source: 'azureFileShare' is served by the ACI standby pool only; use 'hostDir' or 'inImage'`,
			)
		}
	}
	const writableHostDirs = entries.filter(
		(entry) => entry.writable && entry.mount.source.type === 'hostDir',
	)
	if (writableHostDirs.length > 1) {
		reasons.push(
			`${writableHostDirs.map((entry) => entry.field).join(' and ')} are both writable host directories; a sandbox is handed one (make the other 'inImage')`,
		)
	}
	if (writableHostDirs.length > 0 && warmPoolSize > 0) {
		reasons.push(
			`${writableHostDirs[0]?.field} is a writable host directory, which one live sandbox holds at a time; a warm pool (backend.warmPoolSize) would hold it ahead of create()`,
		)
	}
	return reasons
}

/**
 * What every start of this provider shares; the image is resolved at the first start that needs it.
 */
function containerInstanceContext(
	resolved: ResolvedContainerBackendConfig,
	resolvedLayout: ResolvedContainerSandboxLayout,
	hooks: ContainerProviderHooks,
): ContainerInstanceContext {
	let image: Promise<ContainerImage> | undefined
	return {
		backend: resolved,
		layout: resolvedLayout,
		image: () => {
			image ??= resolveContainerImage({
				image: resolved.image,
				cacheDir: resolved.imageCacheDir,
				umociPath: resolved.tools.umoci,
			})
			// A refused image is refused again on the next create, not cached as a failure.
			image.catch(() => {
				image = undefined
			})
			return image
		},
		agentPath: agentBundlePath(),
		...(hooks.egressTestSeam ? { egressSeam: hooks.egressTestSeam } : {}),
	}
}

/** The hand-out: the one `AgentSandbox`, with `checkpoint` / `rollback` where the runtime takes them. */
function containerHandOut(
	store: { readonly stateDir: string; readonly maxCheckpoints: number },
	runtime: string,
	checkpointKinds: readonly SandboxCheckpointKind[],
	outputBudget: ExecOutputBudget,
): (
	instance: ContainerInstance,
	spec: ContainerSandboxSpec,
	forget: () => void,
) => HandedOut<ContainerSandbox> {
	const plain = ownedAgentSandboxHandOut<ContainerSandboxSpec>('linux-namespace', outputBudget)
	return (instance, spec, forget) => {
		const handed = plain(instance, spec, forget)
		const target =
			checkpointKinds.length === 0
				? undefined
				: {
						stateDir: store.stateDir,
						maxCheckpoints: store.maxCheckpoints,
						workspace: instance.hostWorkspace,
						cgroupDirs: instance.cgroupDirs,
						flushFirst: runtime === 'runsc',
					}
		const sandbox = withCheckpointVerbs(handed.sandbox, target)
		const { memory } = instance
		if (memory === undefined || !checkpointKinds.includes('memory')) return { ...handed, sandbox }
		return {
			...handed,
			sandbox: withRunscMemoryVerbs(sandbox, {
				stateDir: store.stateDir,
				maxCheckpoints: store.maxCheckpoints,
				control: memory,
			}),
		}
	}
}

/**
 * The container tier's provider; `createSandboxProvider({ backend: { tier: 'container', … }, layout })`
 * returns the same. Validates the backend and the layout at once and contacts nothing until
 * `create()` (or the warm pool's first start).
 */
export function createContainerSandboxProvider(
	backend: ContainerBackendConfig,
	layout: ContainerSandboxLayout,
	defaults: SandboxProviderDefaults = {},
	hooks: ContainerProviderHooks = {},
): ContainerSandboxProvider {
	if (isRecord(backend) && backend.runtime === 'docker') {
		return createDockerSandboxProvider(backend, layout, defaults, {
			...(hooks.onBackgroundError ? { onBackgroundError: hooks.onBackgroundError } : {}),
			...(hooks.onWarmSandboxReady ? { onWarmSandboxReady: hooks.onWarmSandboxReady } : {}),
		})
	}
	const resolved = resolveContainerBackendConfig(backend)
	// Every container gets the seccomp filter: a host it has no table for is refused now.
	seccompArchOf()
	const resolvedLayout = resolveLayout(layout)
	const refusals = containerLayoutRefusals(resolvedLayout, resolved.warmPoolSize)
	if (refusals.length > 0) throw new ContainerSandboxLayoutValidationError(refusals)
	const defaultSpec = resolveContainerSandboxSpec({}, defaults, resolved.runtime)
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const givenHooks = optionalObject(CONFIG_SITE, 'hooks', hooks)
	optionalFunction(CONFIG_SITE, 'hooks.onBackgroundError', givenHooks.onBackgroundError)
	optionalFunction(CONFIG_SITE, 'hooks.onWarmSandboxReady', givenHooks.onWarmSandboxReady)
	const context = containerInstanceContext(resolved, resolvedLayout, hooks)
	// Every runtime: filesystem checkpoints (gVisor's mounts revalidate against the host, and its
	// page cache is flushed before the capture); gVisor the memory kind too (`runsc checkpoint`).
	const checkpointKinds =
		resolved.runtime === 'runsc' ? RUNSC_CHECKPOINT_KINDS : MACHINE_CHECKPOINT_KINDS
	const fleet = createInstanceFleet<ContainerInstance, ContainerSandboxSpec, ContainerSandbox>({
		// The kernel's migration lock kept warm while it starts (migration-warmth.ts).
		start: (spec, signal) =>
			withMigrationWarmth(() => startContainerInstance(context, spec, signal)),
		// A proxied sandbox is never served from the pool (its proxy is its creator's): none is kept.
		...(resolved.warmPoolSize > 0 && defaultSpec.egress !== 'proxied'
			? {
					pool: {
						size: resolved.warmPoolSize,
						spec: defaultSpec,
						serves: (spec: ContainerSandboxSpec) => canServeFromContainerPool(defaultSpec, spec),
					},
				}
			: {}),
		// A container sandbox's record is the machine layer's record: the same reaper undoes it.
		reap: reapReportingTo(hooks.onBackgroundError, (report) =>
			collectLocalGarbage({ stateDir: resolved.stateDir, ...report }),
		),
		handOut: containerHandOut(resolved, resolved.runtime, checkpointKinds, outputBudget),
		closedError: () => new ContainerProviderClosedError(),
		...(hooks.onBackgroundError ? { onBackgroundError: hooks.onBackgroundError } : {}),
		...(hooks.onWarmSandboxReady ? { onWarmSandboxReady: hooks.onWarmSandboxReady } : {}),
	})

	const create = (config: ContainerSandboxCreateConfig = {}): Promise<ContainerSandbox> => {
		let spec: ContainerSandboxSpec
		try {
			// Checked before anything else runs: a refused config starts, reaps and creates nothing.
			spec = resolveContainerSandboxSpec(config, defaults, resolved.runtime, checkpointKinds)
		} catch (error) {
			return Promise.reject(error)
		}
		return createWithRestoreHook(resolved.stateDir, config, () => fleet.create(spec, config.signal))
	}
	const close = () => fleet.close()
	return {
		id: containerProviderId(resolved.runtime),
		name: containerProviderName(resolved.runtime),
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		// A runtime that takes none still lists and deletes what its state directory holds.
		...machineCheckpointStore(resolved.stateDir, checkpointKinds),
		checkpointKinds,
		create,
		close,
		[Symbol.asyncDispose]: close,
	}
}
