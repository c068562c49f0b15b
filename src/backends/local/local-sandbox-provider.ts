/**
 * The local tier's `SandboxProvider`: every sandbox is the host's `createAgentSandbox` over an agent
 * started by `startLocalInstance`, optionally served from a warm pool. `close()` takes down every
 * sandbox still alive, every start still in flight and the pool — except kept-alive sandboxes
 * (`keepAlive: true`), which outlive the provider and its process by design; `open(id)` reopens
 * them, `list()` shows them. What sandboxes of dead hosts left in the state directory is reaped in
 * the background once the first `create()` settles, or as the warm pool starts (`reap-leftovers.ts`).
 */

import '../../contract/async-dispose.js'
import {
	CONFIG_SITE,
	callSite,
	optionalFunction,
	optionalObject,
	signalOfOptions,
} from '../../contract/argument-validators.js'
import type { SandboxCheckpoint, SandboxCheckpointCallOptions } from '../../contract/checkpoint.js'
import type { SandboxProvider } from '../../contract/provider.js'
import { ExecOutputBudget } from '../../host/exec/exec-output-budget.js'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import { withMigrationWarmth } from '../machine/cgroups/migration-warmth.js'
import {
	type LocalSandboxListing,
	listLocalSandboxes,
} from '../machine/claims/kept-alive-registry.js'
import { collectLocalGarbage } from '../machine/claims/reap-leftovers.js'
import {
	agentSandboxOf,
	createInstanceFleet,
	type InstanceFleet,
	reapReportingTo,
} from '../machine/fleet/instance-fleet.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import { seccompArchOf } from '../machine/seccomp/seccomp-filter.js'
import {
	createWithRestoreHook,
	MACHINE_CHECKPOINT_KINDS,
	machineCheckpointStore,
	withCheckpointVerbs,
} from '../machine/snapshots/checkpoint-verbs.js'
import {
	canServeFromPool,
	LOCAL_CREATE_KEYS,
	type LocalSandboxCreateConfig,
	type MachineSandboxSpec,
	resolveMachineSandboxSpec,
} from '../machine/spec/machine-sandbox-spec.js'
import {
	type LocalBackendConfig,
	type ResolvedLocalBackendConfig,
	resolveLocalBackendConfig,
} from './local-backend-config.js'
import { LocalProviderClosedError } from './local-errors.js'
import type { LocalInstance, LocalInstanceContext } from './local-instance.js'
import type { LocalSandbox } from './local-sandbox.js'
import { startLocalInstance } from './local-start.js'
import { openRecordedSandbox } from './open-local-sandbox.js'

/** `SandboxProvider.id` of the local tier. */
export const LOCAL_PROVIDER_ID = 'namzu-process-local'
/** `SandboxProvider.name` of the local tier under bubblewrap. */
export const LOCAL_PROVIDER_NAME = '@namzu/sandbox:process:bubblewrap'
/** `SandboxProvider.name` of the local tier under `isolation: 'none'` (no sandbox at all). */
export const LOCAL_PROVIDER_NAME_UNCONFINED = '@namzu/sandbox:process:none'

/** Callbacks for what the provider does in the background. */
export interface LocalProviderHooks {
	/** Told about background failures (warm-pool starts and releases). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/** Told the id of each warm-pool sandbox once it is started, probed and ready. Must not throw. */
	readonly onWarmSandboxReady?: (id: string) => void
	/**
	 * @internal Tests only: how the egress proxy resolves names and which CAs it trusts upstream.
	 * The private-range deny set still applies to whatever this resolves to.
	 */
	readonly egressTestSeam?: EgressTestSeam
}

/** The local tier's provider: typed `create()`, plus reopening and listing kept-alive sandboxes. */
export interface LocalSandboxProvider extends SandboxProvider {
	listCheckpoints(options?: SandboxCheckpointCallOptions): Promise<SandboxCheckpoint[]>
	deleteCheckpoint(id: string, options?: SandboxCheckpointCallOptions): Promise<void>
	create(config?: LocalSandboxCreateConfig): Promise<LocalSandbox>
	/** Reopens a kept-alive sandbox of this provider's `stateDir` by id (see `openLocalSandbox`). */
	open(id: string, options?: { readonly signal?: AbortSignal }): Promise<LocalSandbox>
	/** The kept-alive sandboxes recorded in this provider's `stateDir`. */
	list(options?: { readonly signal?: AbortSignal }): Promise<LocalSandboxListing[]>
}

/** The fleet behind the provider: starts, the warm pool, the reaper and the hand-out. */
function localFleet(
	resolved: ResolvedLocalBackendConfig,
	defaultSpec: MachineSandboxSpec,
	outputBudget: ExecOutputBudget,
	hooks: LocalProviderHooks,
): InstanceFleet<MachineSandboxSpec, LocalSandbox> {
	let context: LocalInstanceContext | undefined
	// Resolved at the first start, so a provider without a pool touches nothing until create().
	const instanceContext = () => {
		context ??= {
			backend: resolved,
			agentPath: agentBundlePath(),
			...(hooks.egressTestSeam ? { egressSeam: hooks.egressTestSeam } : {}),
		}
		return context
	}
	return createInstanceFleet<LocalInstance, MachineSandboxSpec, LocalSandbox>({
		// The kernel's migration lock kept warm while it starts (migration-warmth.ts).
		start: (spec, signal) =>
			withMigrationWarmth(() => startLocalInstance(instanceContext(), spec, signal)),
		// A proxied sandbox is never served from the pool (its proxy is its creator's): none is kept.
		...(resolved.warmPoolSize > 0 && defaultSpec.egress !== 'proxied'
			? {
					pool: {
						size: resolved.warmPoolSize,
						spec: defaultSpec,
						serves: (spec: MachineSandboxSpec) => canServeFromPool(defaultSpec, spec),
					},
				}
			: {}),
		// What sandboxes of dead hosts left in this state directory (and expired kept-alive ones).
		reap: reapReportingTo(hooks.onBackgroundError, (report) =>
			collectLocalGarbage({ stateDir: resolved.stateDir, nodePath: resolved.nodePath, ...report }),
		),
		handOut: (instance, spec, forget) => ({
			sandbox: withCheckpointVerbs(
				agentSandboxOf(
					instance,
					{
						environment: instance.environment,
						...(spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: spec.timeoutMs }),
						outputBudget,
					},
					forget,
				),
				{
					stateDir: resolved.stateDir,
					workspace: spec.workingDirectory === undefined ? instance.rootDir : undefined,
					cgroupDirs: instance.cgroupDirs,
					maxCheckpoints: resolved.maxCheckpoints,
				},
			),
			// A kept-alive sandbox is not the provider's to take down on close(): it outlives us.
			owned: instance.descriptor === undefined,
		}),
		closedError: () => new LocalProviderClosedError(),
		...(hooks.onBackgroundError ? { onBackgroundError: hooks.onBackgroundError } : {}),
		...(hooks.onWarmSandboxReady ? { onWarmSandboxReady: hooks.onWarmSandboxReady } : {}),
	})
}

/** The local tier's provider; `createSandboxProvider({ backend: { tier: 'process' } })` returns the same. */
export function createLocalSandboxProvider(
	backend: LocalBackendConfig,
	defaults: SandboxProviderDefaults = {},
	hooks: LocalProviderHooks = {},
): LocalSandboxProvider {
	const resolved = resolveLocalBackendConfig(backend)
	// Every confined sandbox gets the seccomp filter: a host it has no table for is refused now.
	if (resolved.isolation === 'bubblewrap') seccompArchOf()
	const defaultSpec = resolveMachineSandboxSpec({}, defaults)
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const givenHooks = optionalObject(CONFIG_SITE, 'hooks', hooks)
	optionalFunction(CONFIG_SITE, 'hooks.onBackgroundError', givenHooks.onBackgroundError)
	optionalFunction(CONFIG_SITE, 'hooks.onWarmSandboxReady', givenHooks.onWarmSandboxReady)
	const fleet = localFleet(resolved, defaultSpec, outputBudget, hooks)

	const create = (config: LocalSandboxCreateConfig = {}): Promise<LocalSandbox> => {
		let spec: MachineSandboxSpec
		try {
			// Checked before anything else runs: a refused config starts, reaps and creates nothing.
			spec = resolveMachineSandboxSpec(
				config,
				defaults,
				LOCAL_CREATE_KEYS,
				MACHINE_CHECKPOINT_KINDS,
			)
		} catch (error) {
			return Promise.reject(error)
		}
		return createWithRestoreHook(resolved.stateDir, config, () => fleet.create(spec, config.signal))
	}
	const close = () => fleet.close()

	return {
		id: LOCAL_PROVIDER_ID,
		name:
			resolved.isolation === 'bubblewrap' ? LOCAL_PROVIDER_NAME : LOCAL_PROVIDER_NAME_UNCONFINED,
		environment: resolved.isolation === 'bubblewrap' ? 'linux-bwrap' : 'basic',
		workspaceModes: ['ephemeral', 'working-directory'],
		...machineCheckpointStore(resolved.stateDir),
		create,
		open: async (id, options = {}) => {
			const signal = signalOfOptions(callSite('open'), options)
			return openRecordedSandbox(
				id,
				{
					stateDir: resolved.stateDir,
					readyTimeoutMs: resolved.readyTimeoutMs,
					...(signal ? { signal } : {}),
				},
				outputBudget,
				resolved.maxCheckpoints,
			)
		},
		list: async (options = {}) => {
			const signal = signalOfOptions(callSite('list'), options)
			return listLocalSandboxes({ stateDir: resolved.stateDir, ...(signal ? { signal } : {}) })
		},
		close,
		[Symbol.asyncDispose]: close,
	}
}
