/**
 * `runtime: 'aci-standby-pool'`: each sandbox is an Azure Container Instances container group
 * taken from a standby pool (`Microsoft.StandbyPool/standbyContainerGroupPools`) by an ordinary
 * container group PUT, running the same guest agent on TCP; the host reaches it over the `tcp`
 * agent handle with a per-instance token and deletes the group on `destroy()`.
 *
 * The token: a standby group is started before anyone claims it, so nothing per-claim can be in
 * its environment. The profile runs the agent with `NAMZU_AGENT_REQUIRE_TOKEN=1` (trust on first
 * use); the host mints 32 random bytes per claim and presents them first, right after the agent
 * answers `healthz`, which binds them for the life of that group. A peer on the group's subnet that
 * presents a token first makes the bind fail: the group is deleted and the create fails
 * (`agent-token-refused`), never used. Not run against Azure here: the ARM half is tested against
 * the published REST shapes, the agent half against a real agent on TCP.
 */
import '../../../contract/async-dispose.js'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { CONFIG_SITE, optionalEnvironment } from '../../../contract/argument-validators.js'
import { findCauseOfType } from '../../../contract/cause-chain.js'
import type { SandboxCreateConfig, SandboxProvider } from '../../../contract/provider.js'
import { ExecOutputBudget } from '../../../host/exec/exec-output-budget.js'
import { AgentUnauthorizedError } from '../../../host/refusals/refusal-errors.js'
import type { AgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../host/transport/agent-transport.js'
import {
	checkCreateConfig,
	checkProviderDefaults,
	type SandboxProviderDefaults,
} from '../../../provider-defaults.js'
import { AGENT_OP } from '../../../wire/protocol.js'
import {
	createInstanceFleet,
	ownedAgentSandboxHandOut,
} from '../../machine/fleet/instance-fleet.js'
import type { ACIStandbyPoolBackendConfig } from '../container-backend-config.js'
import { ContainerProviderClosedError } from '../container-errors.js'
import { type ContainerSandboxLayout, resolveLayout } from '../container-layout.js'
import { type ResolvedACIConfig, resolveACIConfig } from './aci-config.js'
import {
	type ACIGroupFailureReason,
	ACIGroupNotReadyError,
	ACIOptionUnsupportedError,
} from './aci-errors.js'
import { claimAndWait, claimBody, deleteGroup, layoutVolumes } from './aci-group.js'
import type { ArmClient, ArmFetch } from './arm-client.js'

/** How long a clean-up or `destroy()` DELETE may take. */
export const ACI_DELETE_TIMEOUT_MS = 30_000
/** Pause between `healthz` attempts while the group's agent comes up. */
export const ACI_AGENT_PROBE_INTERVAL_MS = 250

/** What tests swap: the `fetch` ARM is called with. */
export interface ACIProviderInternals {
	readonly fetch?: ArmFetch
}

export interface ACISpec {
	readonly timeoutMs?: number
}

interface ACIInstance {
	readonly id: string
	readonly transport: AgentTransport
	readonly rootDir: string
	hasExited(): boolean
	release(): Promise<void>
}

const UNSUPPORTED: Readonly<Record<string, string>> = {
	workingDirectory: 'the group has no host directory; use the layout outputs',
	memoryLimitMb: "the group's resources are the container group profile's; set them there",
	maxProcesses: "the group's limits are the container group profile's",
	egress:
		"the group's network is the profile's and its subnet's; control egress with the subnet's network security group",
}

const DEFAULT_FIELDS: Readonly<Record<string, keyof SandboxProviderDefaults>> = {
	memoryLimitMb: 'defaultMemoryLimitMb',
	maxProcesses: 'defaultMaxProcesses',
	egress: 'defaultEgress',
}

function refuseUnsupportedDefaults(defaults: SandboxProviderDefaults): void {
	for (const [field, name] of Object.entries(DEFAULT_FIELDS)) {
		if (defaults[name] !== undefined) {
			throw new ACIOptionUnsupportedError(name, UNSUPPORTED[field] ?? '')
		}
	}
}

/** The spec a `create()` config asks for: checked before any ARM request. */
export function resolveACISpec(
	config: SandboxCreateConfig,
	defaults: SandboxProviderDefaults,
): ACISpec {
	const given = checkCreateConfig(config)
	for (const field of Object.keys(UNSUPPORTED)) {
		const value = (given as Readonly<Record<string, unknown>>)[field]
		if (value !== undefined) throw new ACIOptionUnsupportedError(field, UNSUPPORTED[field] ?? '')
	}
	const env = optionalEnvironment(CONFIG_SITE, 'env', given.env) ?? {}
	if (Object.keys(env).length > 0) {
		throw new ACIOptionUnsupportedError(
			'env',
			"a claim cannot change a standby group's environment; put it in the container group profile",
		)
	}
	const timeoutMs = given.timeoutMs ?? defaults.defaultTimeoutMs
	return timeoutMs === undefined ? {} : { timeoutMs }
}

/** Retries `healthz` until the agent answers or the deadline passes; false when it never did. */
async function agentAnswers(
	transport: AgentTransport,
	deadlineAt: number,
	signal: AbortSignal,
): Promise<boolean> {
	for (;;) {
		signal.throwIfAborted()
		const remainingMs = deadlineAt - performance.now()
		if (remainingMs <= 0) return false
		try {
			await transport.healthz(
				AbortSignal.any([signal, AbortSignal.timeout(Math.ceil(remainingMs))]),
			)
			return true
		} catch {
			// Not up yet (the group's container may still be starting): ask again until the deadline.
			if (signal.aborted) throw signal.reason
			const pauseMs = Math.min(ACI_AGENT_PROBE_INTERVAL_MS, deadlineAt - performance.now())
			if (pauseMs > 0) await sleep(pauseMs, undefined, { signal })
		}
	}
}

/** A clean-up DELETE that never hides the error that caused it: true when ARM accepted it. */
async function cleanUp(
	client: ArmClient,
	config: ResolvedACIConfig,
	name: string,
): Promise<boolean> {
	try {
		await deleteGroup(client, config, name, AbortSignal.timeout(ACI_DELETE_TIMEOUT_MS))
		return true
	} catch {
		return false
	}
}

// long: the claim, the wait, the agent and the token bind, each failure deleting the group
async function startInstance(
	client: ArmClient,
	config: ResolvedACIConfig,
	volumes: Record<string, unknown>,
	rootDir: string,
	signal: AbortSignal,
): Promise<ACIInstance> {
	signal.throwIfAborted()
	const name = `${config.containerNamePrefix}-${randomBytes(6).toString('hex')}`
	const token = randomBytes(32).toString('base64url')
	const deadlineAt = performance.now() + config.readyTimeoutMs
	const notReady = async (
		reason: ACIGroupFailureReason,
		detail: string,
		fields: { readonly provisioningState?: string; readonly cause?: unknown } = {},
	): Promise<never> => {
		const deleted = await cleanUp(client, config, name)
		throw new ACIGroupNotReadyError(
			reason,
			name,
			detail,
			{
				deleted,
				...(fields.provisioningState === undefined
					? {}
					: { provisioningState: fields.provisioningState }),
			},
			fields.cause === undefined ? {} : { cause: fields.cause },
		)
	}
	let outcome: Awaited<ReturnType<typeof claimAndWait>>
	try {
		outcome = await claimAndWait(
			client,
			config,
			name,
			claimBody(config, volumes),
			deadlineAt,
			signal,
		)
	} catch (error) {
		// The PUT may have landed even when its answer never came: delete by name either way.
		await cleanUp(client, config, name)
		throw signal.aborted ? signal.reason : error
	}
	if (!outcome.ok) {
		return notReady(outcome.kind, outcome.detail, {
			...(outcome.provisioningState === undefined
				? {}
				: { provisioningState: outcome.provisioningState }),
		})
	}
	const transport = new AgentTransport({
		kind: 'tcp',
		host: outcome.ip,
		port: config.agentPort,
		token,
	})
	try {
		if (!(await agentAnswers(transport, deadlineAt, signal))) {
			return notReady(
				'agent-unreachable',
				`the agent at ${outcome.ip}:${config.agentPort} did not answer healthz within readyTimeoutMs`,
			)
		}
		// The first authenticated op binds this claim's token (trust on first use in the group).
		await transport.call(AGENT_OP.listSessions, {}, { signal })
	} catch (error) {
		if (signal.aborted) {
			await cleanUp(client, config, name)
			throw signal.reason
		}
		if (error instanceof ACIGroupNotReadyError) throw error
		if (findCauseOfType(error, AgentUnauthorizedError)) {
			return notReady(
				'agent-token-refused',
				'the agent refused this claim’s token: another peer bound the group first',
				{ cause: error },
			)
		}
		return notReady('agent-unreachable', 'the agent failed its first authenticated call', {
			cause: error,
		})
	}
	let releasing: Promise<void> | undefined
	return {
		id: name,
		transport,
		rootDir,
		hasExited: () => false,
		// One DELETE at a time; a failed one may be retried by a later destroy().
		release: () => {
			releasing ??= deleteGroup(
				client,
				config,
				name,
				AbortSignal.timeout(ACI_DELETE_TIMEOUT_MS),
			).catch((error: unknown) => {
				releasing = undefined
				throw error
			})
			return releasing
		},
	}
}

/**
 * A provider of ACI standby-pool sandboxes (`createSandboxProvider` with `tier: 'container'` and
 * `runtime: 'aci-standby-pool'` builds the same). Contacts nothing (no token asked) until
 * `create()`; the layout's outputs path is each sandbox's root.
 */
export function createACIStandbyPoolProvider(
	backend: ACIStandbyPoolBackendConfig,
	layout: ContainerSandboxLayout,
	defaults: SandboxProviderDefaults = {},
	internals: ACIProviderInternals = {},
): SandboxProvider {
	const config = resolveACIConfig(backend)
	checkProviderDefaults(defaults)
	refuseUnsupportedDefaults(defaults)
	const resolvedLayout = resolveLayout(layout)
	const volumes = layoutVolumes(config, resolvedLayout)
	const client: ArmClient = {
		fetch: internals.fetch ?? ((url, init) => fetch(url, init)),
		getArmToken: config.getArmToken,
		apiVersion: config.apiVersion,
	}
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	const rootDir = resolvedLayout.outputs.containerPath
	const fleet = createInstanceFleet<ACIInstance, ACISpec, AgentSandbox>({
		start: (_spec, signal) => startInstance(client, config, volumes, rootDir, signal),
		// The standby pool is the warm pool; groups left by a dead host are the pool owner's to
		// delete (their names start with containerNamePrefix).
		reap: () => Promise.resolve(),
		handOut: ownedAgentSandboxHandOut('linux-namespace', outputBudget),
		closedError: () => new ContainerProviderClosedError(),
	})
	const create = (createConfig: SandboxCreateConfig = {}): Promise<AgentSandbox> => {
		let spec: ACISpec
		try {
			spec = resolveACISpec(createConfig, defaults)
		} catch (error) {
			return Promise.reject(error)
		}
		return fleet.create(spec, createConfig.signal)
	}
	const close = () => fleet.close()
	return {
		id: 'namzu-container-aci-standby-pool',
		name: '@namzu/sandbox:container:aci-standby-pool',
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		checkpointKinds: [],
		create,
		close,
		[Symbol.asyncDispose]: close,
	}
}
