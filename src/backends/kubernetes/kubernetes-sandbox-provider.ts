/**
 * The Kubernetes task tier's `SandboxProvider`. Construction validates everything and contacts
 * nothing; each `create()` refuses the per-sandbox options this tier cannot honour, acquires
 * (acquire-task-sandbox.ts), wraps the pod's agent in the shared `AgentSandbox` over a `tcp`
 * handle carrying the pod uid as bind token (stream heartbeat on by default here), proves the
 * guest deprivileged within min(readyTimeoutMs, 15 s) — there is no switch that skips it — and only
 * then starts the lease and hands the sandbox out. A refused probe destroys what it acquired. For
 * a claim the probe runs while the bound pod's network check is in flight; both must pass.
 */

import '../../contract/async-dispose.js'
import { raceSignal } from '../../common/bounded-promise.js'
import { findCauseOfType } from '../../contract/cause-chain.js'
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxCreateConfig, SandboxProvider } from '../../contract/provider.js'
import type { Sandbox } from '../../contract/sandbox.js'
import {
	probeSandboxPrivileges,
	SandboxPrivilegeProbeError,
} from '../../exec-programs/privilege-probe.js'
import { ExecOutputBudget } from '../../host/exec/exec-output-budget.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import {
	checkCreateConfig,
	checkProviderDefaults,
	type SandboxProviderDefaults,
	sandboxDefaultTimeoutMs,
} from '../../provider-defaults.js'
import {
	type AcquiredTaskSandbox,
	type AcquireNetworkChecks,
	acquireTaskSandbox,
} from './acquire-task-sandbox.js'
import { createKubernetesClient } from './api/create-kubernetes-client.js'
import { apiPortOf } from './client-port.js'
import { isPermanentDialFailure } from './guest-call-errors.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import {
	type KubernetesBackendConfig,
	type ResolvedKubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from './kubernetes-backend-config.js'
import { EXTENSIONS_API_GROUP_VERSION, SANDBOX_API_GROUP_VERSION } from './kubernetes-objects.js'
import {
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentRetiringError,
	KubernetesAgentUnauthorizedError,
	KubernetesCreateOptionUnsupportedError,
	KubernetesPrivilegeProbeError,
} from './kubernetes-sandbox-errors.js'
import { KubernetesTaskSandbox } from './kubernetes-task-sandbox.js'
import { KubernetesLeaseRenewal } from './lease-renewal.js'
import { AdmissionFence } from './network/admission-fence.js'
import { KubernetesNetworkVerifier } from './network/network-verifier.js'
import { PerSandboxPolicyWriter } from './network/per-sandbox-policy-writer.js'
import { KubernetesPerSandboxEgressTaskSandbox } from './per-sandbox-egress-task-sandbox.js'
import { DialTracker, PodRebinder } from './pod-rebind.js'
import { KubernetesAgentTransport } from './transport.js'
import { probeTimeoutMs, warmUpPod } from './warm-pool-probe.js'
import { WarmPoolRoster } from './warm-pool-roster.js'

/** The guest image's workspace (`NAMZU_SANDBOX_WORKSPACE`); relative paths resolve against it. */
export const KUBERNETES_WORKSPACE_ROOT = '/workspace'

/** Per-sandbox options refused by name: set them on the SandboxTemplate instead. */
const REFUSED_CREATE_OPTIONS = [
	'env',
	'memoryLimitMb',
	'maxProcesses',
	'egress',
	'workingDirectory',
] as const

const REFUSED_DEFAULTS = ['defaultEgress', 'defaultMemoryLimitMb', 'defaultMaxProcesses'] as const

/** Throws `KubernetesCreateOptionUnsupportedError` naming the first refused option that is set. */
export function refuseUnsupportedCreateOptions(config: SandboxCreateConfig): void {
	for (const option of REFUSED_CREATE_OPTIONS) {
		if (config[option] !== undefined) throw new KubernetesCreateOptionUnsupportedError(option)
	}
}

export interface KubernetesProviderDependencies {
	/** Replaces the API client (tests record requests through it). */
	readonly api?: KubernetesApiPort
}

/**
 * The Kubernetes tier's `SandboxProvider`: each `create()` claims from `warmPoolName` or POSTs a
 * `Sandbox` from `sandboxTemplateName`, verifies the network boundary and the guest's privileges,
 * and hands out a leased task sandbox.
 */
export function createKubernetesSandboxProvider(
	config: KubernetesBackendConfig,
	defaults?: SandboxProviderDefaults,
): SandboxProvider
/** @internal Tests replace the API client. */
export function createKubernetesSandboxProvider(
	config: KubernetesBackendConfig,
	defaults: SandboxProviderDefaults,
	dependencies: KubernetesProviderDependencies,
): SandboxProvider
export function createKubernetesSandboxProvider(
	config: KubernetesBackendConfig,
	defaults: SandboxProviderDefaults = {},
	dependencies: KubernetesProviderDependencies = {},
): SandboxProvider {
	const resolved = resolveKubernetesBackendConfig(config)
	checkProviderDefaults(defaults)
	for (const field of REFUSED_DEFAULTS) {
		if (defaults[field] !== undefined) {
			throw new SandboxConfigError(
				field,
				'cannot be applied per sandbox on the Kubernetes backend; set it on the SandboxTemplate',
			)
		}
	}
	const outputBudget = new ExecOutputBudget(defaults.execOutputBudgetBytes)
	let api = dependencies.api
	// Created at the first create(): construction contacts (and reads) nothing.
	const apiPort = (): KubernetesApiPort => {
		api ??= apiPortOf(
			createKubernetesClient(resolved.access, {
				...(resolved.apiRequestTimeoutMs === undefined
					? {}
					: { apiRequestTimeoutMs: resolved.apiRequestTimeoutMs }),
			}),
		)
		return api
	}
	let network: KubernetesNetworkVerifier | undefined
	// One per backend: the named-object pass and the union passes are remembered across creates.
	const networkChecks = (port: KubernetesApiPort): KubernetesNetworkVerifier => {
		network ??= new KubernetesNetworkVerifier({
			api: port,
			namespace: resolved.namespace,
			sandboxTemplateName: resolved.sandboxTemplateName,
			agentPort: resolved.agentPort,
			...(resolved.egress === undefined ? {} : { egress: resolved.egress }),
			ingress: resolved.ingress,
		})
		return network
	}
	const roster = rosterHolder(resolved)
	let fence: AdmissionFence | undefined
	// One per backend: the admission fence is proven once, before the first policy write.
	const admissionFence = (port: KubernetesApiPort): AdmissionFence => {
		fence ??= new AdmissionFence(port)
		return fence
	}
	const provider: SandboxProvider = {
		id: `kubernetes:${resolved.namespace}`,
		name: 'kubernetes',
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		checkpointKinds: [],
		create: async (createConfig: SandboxCreateConfig = {}) => {
			checkCreateConfig(createConfig)
			refuseUnsupportedCreateOptions(createConfig)
			const timeoutMs = sandboxDefaultTimeoutMs(createConfig, defaults)
			const port = apiPort()
			const checks = networkChecks(port)
			const poolRoster = roster.get(port)
			return createKubernetesTaskSandbox(port, resolved, {
				...(poolRoster ? { roster: poolRoster } : {}),
				...(timeoutMs === undefined ? {} : { defaultTimeoutMs: timeoutMs }),
				outputBudget,
				...(createConfig.signal ? { signal: createConfig.signal } : {}),
				...(checks.active ? { network: checks } : {}),
				...(resolved.egress?.perSandbox ? { admissionFence: admissionFence(port) } : {}),
			})
		},
		close: () => roster.close(),
		[Symbol.asyncDispose]: () => provider.close(),
	}
	return provider
}

/** The backend's one warm-pool roster (pool only), made at the first create: it serves every later one. */
function rosterHolder(config: ResolvedKubernetesBackendConfig) {
	let roster: WarmPoolRoster | undefined
	return {
		get(port: KubernetesApiPort): WarmPoolRoster | undefined {
			const poolName = config.warmPoolName
			if (poolName === undefined) return undefined
			roster ??= new WarmPoolRoster({
				api: port,
				namespace: config.namespace,
				poolName,
				warm: (pod, closed) => warmUpPod(config, KUBERNETES_WORKSPACE_ROOT, pod, closed),
			})
			return roster
		},
		close: async (): Promise<void> => {
			await roster?.close()
		},
	}
}

export interface CreateTaskSandboxOptions {
	readonly defaultTimeoutMs?: number
	/** The provider's budget of exec output held on the host, shared by its sandboxes. */
	readonly outputBudget?: ExecOutputBudget
	readonly signal?: AbortSignal
	/** The guest's workspace, default `KUBERNETES_WORKSPACE_ROOT` (tests point it elsewhere). */
	readonly rootDir?: string
	/** The backend's network checks; the provider always passes its own when any is on. */
	readonly network?: AcquireNetworkChecks
	/** Under `egress.perSandbox`: the backend's fence (one is made for this sandbox otherwise). */
	readonly admissionFence?: AdmissionFence
	/** With `warmPoolName`: the backend's roster, refreshed by this create and read at the bind. */
	readonly roster?: WarmPoolRoster
}

/** Acquire → transport → sandbox → probe → lease; see the module comment. */
export async function createKubernetesTaskSandbox(
	api: KubernetesApiPort,
	config: ResolvedKubernetesBackendConfig,
	options: CreateTaskSandboxOptions = {},
): Promise<Sandbox> {
	const { signal, roster } = options
	const probe = (sandbox: WrappedSandbox) =>
		probeSandboxPrivileges(sandbox.prober, signal, {
			timeoutMs: probeTimeoutMs(config),
		})
			.finally(() => sandbox.prober.destroy().catch(() => undefined))
			.then(
				(): ProbeOutcome => PROBE_PASSED,
				(error: unknown): ProbeOutcome => ({ failed: true, error }),
			)
	// One probe per binding (pod uid and address), started as soon as that binding is known: at the
	// bind when the roster listed the pod, else after the pod read; a claim's network check runs
	// meanwhile. A uid the roster already proved is not probed again, nor one it is probing (that
	// probe is waited for, and repeated here unless it passed). What is handed out is the
	// binding the pod read confirmed, proved.
	let current:
		| { binding: string; sandbox: WrappedSandbox; probed: ReturnType<typeof probe> }
		| undefined
	const probing = (bound: AcquiredTaskSandbox) => {
		const binding = `${bound.token} ${bound.host}`
		if (current?.binding !== binding) {
			const sandbox = wrapAcquired(api, config, bound, options)
			const passed = async (): Promise<ProbeOutcome> => {
				await sandbox.prober.destroy().catch(() => undefined)
				return PROBE_PASSED
			}
			const warming = roster?.warming(bound.token)
			const probed = roster?.passed(bound.token)
				? passed()
				: warming
					? raceSignal(warming, signal).then(
							(ok) => (ok ? passed() : probe(sandbox)),
							(error: unknown): ProbeOutcome => ({ failed: true, error }),
						)
					: probe(sandbox)
			current = { binding, sandbox, probed }
		}
		return current
	}
	roster?.refresh()
	const acquired = await acquireTaskSandbox(
		{
			api,
			config,
			...(options.network ? { network: options.network } : {}),
			whileVerifying: async (bound) => {
				await probing(bound).probed
			},
			...(roster
				? {
						lookupPod: (podName: string) => roster.lookup(podName),
						anticipate: (bound: AcquiredTaskSandbox) => {
							probing(bound)
						},
					}
				: {}),
		},
		signal,
	).catch(async (error: unknown) => {
		// The claim is already released; this closes what the probe opened (its DELETE finds it gone).
		await current?.sandbox.destroy().catch(() => {})
		throw error
	})
	const { sandbox, probed: outcome } = probing(acquired)
	const probed = await outcome
	if (probed.failed) {
		await sandbox.destroy().catch(() => {})
		signal?.throwIfAborted()
		throw probeFailure(probed.error, acquired.id)
	}
	sandbox.startLease()
	return sandbox.handle
}

type ProbeOutcome = { readonly failed: false } | { readonly failed: true; readonly error: unknown }

const PROBE_PASSED: ProbeOutcome = { failed: false }

/** The probe's own failure, or — when the guest could not be reached at all — why not. */
export function probeFailure(error: unknown, sandboxId: string): unknown {
	if (!(error instanceof SandboxPrivilegeProbeError)) return error
	const unreachable =
		findCauseOfType(error, KubernetesAgentAddressUnresolvableError) ??
		findCauseOfType(error, KubernetesAgentUnauthorizedError)
	if (unreachable) return unreachable
	return new KubernetesPrivilegeProbeError(error, sandboxId)
}

interface WrappedSandbox {
	readonly handle: KubernetesTaskSandbox
	/**
	 * A throwaway handle over the same transport that the privilege probe runs on, so the handed-out
	 * sandbox's `events()` begins with the caller's own first exec (as on the machine tiers).
	 */
	readonly prober: KubernetesTaskSandbox
	destroy(): Promise<void>
	startLease(): void
}

/** The agent transport of an acquired pod, its dials tracked; in `pod-ip` mode it follows the pod. */
function taskTransport(
	api: KubernetesApiPort,
	config: ResolvedKubernetesBackendConfig,
	acquired: AcquiredTaskSandbox,
): { transport: KubernetesAgentTransport; tracker: DialTracker; rebinder?: PodRebinder } {
	const onDialAttempt = config.onDialAttempt
	const podIp = config.agentAddress === 'pod-ip'
	const tracker = new DialTracker()
	let rebinder: PodRebinder | undefined
	const transport = new KubernetesAgentTransport(
		{ kind: 'tcp', host: acquired.host, port: config.agentPort, token: acquired.token },
		{
			...(config.onExecTiming ? { onTiming: config.onExecTiming } : {}),
			streamHeartbeatMs: config.streamHeartbeatMs,
			permanentDialFailure: podIp
				? () => rebinder?.permanentDialFailure() ?? false
				: isPermanentDialFailure,
			onDialAttempt: () => {
				tracker.onAttempt()
				onDialAttempt?.({
					host: transport.handle.kind === 'tcp' ? transport.handle.host : acquired.host,
					port: config.agentPort,
				})
			},
			onDial: () => {
				tracker.onSocket()
				rebinder?.dialSucceeded()
			},
		},
	)
	if (!podIp) return { transport, tracker }
	rebinder = new PodRebinder({
		api,
		namespace: config.namespace,
		podName: acquired.podName,
		port: config.agentPort,
		token: acquired.token,
		transport,
	})
	return { transport, tracker, rebinder }
}

/**
 * The sandbox over that transport: released, and retired, by deleting the cluster object. The
 * probe's (`releases: false`) releases nothing; an unconfirmable cancellation still retires the pod.
 */
function taskAgentSandbox(
	api: KubernetesApiPort,
	acquired: AcquiredTaskSandbox,
	transport: KubernetesAgentTransport,
	options: CreateTaskSandboxOptions & { readonly releases: boolean },
) {
	const { defaultTimeoutMs } = options
	const release = async (signal?: AbortSignal): Promise<void> => {
		await api.delete(acquired.created.path, { ...(signal ? { signal } : {}) })
	}
	return createAgentSandbox({
		id: acquired.id,
		transport,
		rootDir: options.rootDir ?? KUBERNETES_WORKSPACE_ROOT,
		environment: 'linux-namespace',
		...(defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs }),
		...(options.outputBudget ? { outputBudget: options.outputBudget } : {}),
		execution: transport.executionOptions,
		release: options.releases ? release : async () => undefined,
		// A guest that fenced itself is named; the refused reservation ran nothing, so nothing is
		// retired on its account.
		fencedGuest: (error, operation) =>
			new KubernetesAgentRetiringError(acquired.id, operation, 'task', { cause: error }),
		// An unconfirmable cancellation retires the pod: deleting the object kills every process.
		retire: async (error) => {
			try {
				await release(AbortSignal.timeout(30_000))
				return { accepted: true, reason: error.message }
			} catch (cause) {
				return { accepted: false, error: cause instanceof Error ? cause : new Error(String(cause)) }
			}
		},
	})
}

type TaskHandleOptions = ConstructorParameters<typeof KubernetesTaskSandbox>[0]

/** The caller's handle: a plain task sandbox, or one that writes its own egress policy first. */
function taskHandle(
	api: KubernetesApiPort,
	config: ResolvedKubernetesBackendConfig,
	acquired: AcquiredTaskSandbox,
	options: CreateTaskSandboxOptions,
	handleOptions: TaskHandleOptions,
): KubernetesTaskSandbox {
	const perSandbox = config.egress?.perSandbox
	if (perSandbox === undefined) return new KubernetesTaskSandbox(handleOptions)
	const claim = acquired.created.kind === 'claim'
	return new KubernetesPerSandboxEgressTaskSandbox({
		...handleOptions,
		policyWriter: new PerSandboxPolicyWriter({
			api,
			namespace: config.namespace,
			perSandbox,
			fence: options.admissionFence ?? new AdmissionFence(api),
			sandboxId: acquired.id,
			owner: {
				apiVersion: claim ? EXTENSIONS_API_GROUP_VERSION : SANDBOX_API_GROUP_VERSION,
				kind: claim ? 'SandboxClaim' : 'Sandbox',
				name: acquired.created.name,
				uid: acquired.created.uid,
			},
		}),
	})
}

function wrapAcquired(
	api: KubernetesApiPort,
	config: ResolvedKubernetesBackendConfig,
	acquired: AcquiredTaskSandbox,
	options: CreateTaskSandboxOptions,
): WrappedSandbox {
	const { transport, tracker, rebinder } = taskTransport(api, config, acquired)
	const inner = taskAgentSandbox(api, acquired, transport, { ...options, releases: true })
	const podRebind = rebinder ? { podRebind: { tracker, rebinder } } : {}
	let handle: KubernetesTaskSandbox | undefined
	const lease = new KubernetesLeaseRenewal({
		api,
		path: acquired.created.path,
		kind: acquired.created.kind,
		ttlSeconds: config.claimTtlSeconds,
		...(config.onLeaseRenewalError ? { onError: config.onLeaseRenewalError } : {}),
		onGone: (error) => handle?.markGone(error),
	})
	const created = taskHandle(api, config, acquired, options, {
		inner,
		host: acquired.host,
		addressMode: config.agentAddress,
		lease,
		...podRebind,
	})
	handle = created
	const prober = new KubernetesTaskSandbox({
		inner: taskAgentSandbox(api, acquired, transport, { ...options, releases: false }),
		host: acquired.host,
		addressMode: config.agentAddress,
		...podRebind,
	})
	return {
		handle: created,
		prober,
		destroy: () => created.destroy(),
		startLease: () => lease.start(),
	}
}
