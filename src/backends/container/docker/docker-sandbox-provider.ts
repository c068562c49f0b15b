/**
 * The container tier on a Docker engine (`runtime: 'docker'`): the same agent and the same
 * `AgentSandbox`, each container made through the Engine API (`docker-instance.ts`), the machine
 * layer's fleet and warm pool around them, and a crashed host's containers reaped by label once
 * the first create settles (or as the pool starts).
 */
import '../../../contract/async-dispose.js'
import type { SandboxCheckpointStore } from '../../../contract/checkpoint.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import type { SandboxProvider } from '../../../contract/provider.js'
import { ExecOutputBudget } from '../../../host/exec/exec-output-budget.js'
import { agentBundlePath } from '../../../host/sandbox/agent-bundle-path.js'
import type { SandboxProviderDefaults } from '../../../provider-defaults.js'
import {
	createInstanceFleet,
	ownedAgentSandboxHandOut,
	reapReportingTo,
} from '../../machine/fleet/instance-fleet.js'
import type { MachineSandbox } from '../../machine/machine-sandbox.js'
import {
	machineCheckpointStore,
	withCheckpointVerbs,
} from '../../machine/snapshots/checkpoint-verbs.js'
import type { ContainerBackendConfig } from '../container-backend-config.js'
import {
	ContainerEgressUnsupportedError,
	ContainerProviderClosedError,
	ContainerSandboxLayoutValidationError,
} from '../container-errors.js'
import { type ContainerSandboxLayout, resolveLayout } from '../container-layout.js'
import {
	type ContainerSandboxCreateConfig,
	type ContainerSandboxSpec,
	canServeFromContainerPool,
	resolveContainerSandboxSpec,
} from '../container-sandbox-spec.js'
import { resolveDockerBackendConfig } from './docker-backend-config.js'
import {
	DockerEngineClient,
	type DockerEngineKind,
	dockerEngineKind,
} from './docker-engine-client.js'
import { type DockerInstance, startDockerInstance } from './docker-instance.js'
import { dockerLayoutRefusals } from './docker-layout.js'
import { reapDockerLeftovers } from './docker-reaper.js'

/** Why only `deny-all` holds on a Docker engine. */
export const DOCKER_EGRESS_REASON =
	"a Docker engine's networks give a container the host's routes (or none): only 'deny-all' (NetworkMode 'none') is enforced; the proxied kinds and allow-all's host-address guard need the host to enter the container's network namespace"

export interface DockerProviderHooks {
	readonly onBackgroundError?: (error: unknown) => void
	readonly onWarmSandboxReady?: (id: string) => void
}

/** A `create()` config on a Docker engine: the container tier's, less what the engine cannot do. */
export function resolveDockerSandboxSpec(
	config: ContainerSandboxCreateConfig,
	defaults: SandboxProviderDefaults,
): ContainerSandboxSpec {
	const spec = resolveContainerSandboxSpec(config, defaults)
	if (spec.egress !== 'deny-all') {
		throw new ContainerEgressUnsupportedError(
			spec.proxiedEgress?.kind ?? spec.egress,
			'docker',
			DOCKER_EGRESS_REASON,
		)
	}
	if (spec.diskLimitMb !== undefined) {
		throw new SandboxConfigError(
			'diskLimitMb',
			"not supported on runtime 'docker': the workspace is a tmpfs bounded by the memory limit",
		)
	}
	return spec
}

/** The fleet's hand-out: an owned agent sandbox whose checkpoint verbs refuse by name. */
function dockerHandOut(outputBudget: ExecOutputBudget): (
	instance: DockerInstance,
	spec: ContainerSandboxSpec,
	forget: () => void,
) => {
	readonly sandbox: MachineSandbox
	readonly owned: boolean
} {
	const plain = ownedAgentSandboxHandOut<ContainerSandboxSpec>('linux-namespace', outputBudget)
	return (instance, spec, forget) => {
		const handed = plain(instance, spec, forget)
		return { ...handed, sandbox: withCheckpointVerbs(handed.sandbox, undefined) }
	}
}

export function createDockerSandboxProvider(
	backend: ContainerBackendConfig,
	layout: ContainerSandboxLayout,
	defaults: SandboxProviderDefaults = {},
	hooks: DockerProviderHooks = {},
): SandboxProvider &
	Required<Omit<SandboxCheckpointStore, 'checkpointKinds'>> & {
		create(config?: ContainerSandboxCreateConfig): Promise<MachineSandbox>
	} {
	const resolved = resolveDockerBackendConfig(backend)
	const resolvedLayout = resolveLayout(layout)
	const refusals = dockerLayoutRefusals(resolvedLayout)
	if (refusals.length > 0) throw new ContainerSandboxLayoutValidationError(refusals)
	const defaultSpec = resolveDockerSandboxSpec({}, defaults)
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const client = new DockerEngineClient(resolved.socketPath)
	let engine: Promise<DockerEngineKind> | undefined
	const context = {
		client,
		image: resolved.image,
		stateDir: resolved.stateDir,
		labels: resolved.labels,
		readyTimeoutMs: resolved.readyTimeoutMs,
		readyPollIntervalMs: resolved.readyPollIntervalMs,
		agentPath: agentBundlePath(),
		layout: resolvedLayout,
		engine: () => {
			engine ??= dockerEngineKind(client, AbortSignal.timeout(resolved.readyTimeoutMs))
			// An engine not up yet is asked again on the next create, not remembered as a failure.
			engine.catch(() => {
				engine = undefined
			})
			return engine
		},
	}
	const fleet = createInstanceFleet<DockerInstance, ContainerSandboxSpec, MachineSandbox>({
		start: (spec, signal) => startDockerInstance(context, spec, signal),
		...(resolved.warmPoolSize > 0
			? {
					pool: {
						size: resolved.warmPoolSize,
						spec: defaultSpec,
						serves: (spec: ContainerSandboxSpec) => canServeFromContainerPool(defaultSpec, spec),
					},
				}
			: {}),
		reap: reapReportingTo(hooks.onBackgroundError, (report) =>
			reapDockerLeftovers({ client, stateDir: resolved.stateDir, ...report }),
		),
		handOut: dockerHandOut(outputBudget),
		closedError: () => new ContainerProviderClosedError(),
		...(hooks.onBackgroundError ? { onBackgroundError: hooks.onBackgroundError } : {}),
		...(hooks.onWarmSandboxReady ? { onWarmSandboxReady: hooks.onWarmSandboxReady } : {}),
	})
	const create = (config: ContainerSandboxCreateConfig = {}): Promise<MachineSandbox> => {
		let spec: ContainerSandboxSpec
		try {
			spec = resolveDockerSandboxSpec(config, defaults)
		} catch (error) {
			return Promise.reject(error)
		}
		return fleet.create(spec, config.signal)
	}
	const close = () => fleet.close()
	return {
		id: 'namzu-container-docker',
		name: '@namzu/sandbox:container:docker',
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		// Takes none; still lists and deletes what its state directory holds, as every container runtime.
		...machineCheckpointStore(resolved.stateDir),
		checkpointKinds: [],
		create,
		close,
		[Symbol.asyncDispose]: close,
	}
}
