/**
 * `backend` settings of the Kubernetes task-sandbox tier and their validation. Everything is
 * checked at provider construction, before a single request goes out, and each refusal names the
 * field; defaults live here so every file reads one resolved shape.
 */
import {
	CONFIG_SITE,
	MAX_TIMER_MS,
	optionalDurationMs,
	optionalFunction,
	optionalInteger,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../contract/argument-validators.js'
import { SandboxConfigError } from '../../contract/errors.js'
import type { RemoteExecutionTiming } from '../../host/exec/execution-timing.js'
import { DEFAULT_STREAM_HEARTBEAT_MS } from '../../wire/heartbeat.js'
import type { KubernetesClusterAccess } from './api/index.js'
import {
	type KubernetesEgressConfig,
	type ResolvedEgressConfig,
	resolveEgressConfig,
} from './network/egress-config.js'
import {
	type KubernetesIngressConfig,
	type ResolvedIngressConfig,
	resolveIngressConfig,
} from './network/ingress-config.js'

export type KubernetesAgentAddressMode = 'service' | 'pod-ip'

export interface KubernetesBackendConfig {
	readonly tier: 'microvm'
	readonly service: 'kubernetes'
	/** Namespace every object lives in. */
	readonly namespace: string
	/** `{ inCluster: true }`, `{ server, ca?, getToken }` or a kubeconfig (api/). */
	readonly access: KubernetesClusterAccess
	/** The `SandboxTemplate` a pool-less `create()` builds its `Sandbox` from. */
	readonly sandboxTemplateName: string
	/** With it, `create()` claims from this `SandboxWarmPool`; without it, creates a `Sandbox`. */
	readonly warmPoolName?: string
	/** Port the guest agent listens on, default 1024. */
	readonly agentPort?: number
	/** `service` (default): `status.serviceFQDN`; `pod-ip`: the bound pod's IP (host outside the cluster). */
	readonly agentAddress?: KubernetesAgentAddressMode
	/** Pause between readiness reads, default 50. */
	readonly readyPollIntervalMs?: number
	/** Readiness budget of one acquire (binding, pod IP), default 60 000. */
	readonly readyTimeoutMs?: number
	/** `shutdownTime` = now + this on every created object; renewed by the lease. Default 3600. */
	readonly claimTtlSeconds?: number
	/** Told about every failed lease renewal (the loop retries on a capped backoff). Must not throw. */
	readonly onLeaseRenewalError?: (error: Error) => void
	/** Bound on every API request (api/), default 30 000, at least 1000. */
	readonly apiRequestTimeoutMs?: number
	/** Heartbeat on terminals and tcp connections, default 15 000; 0 sends none. */
	readonly streamHeartbeatMs?: number
	/** Written into every `SandboxClaim`'s `metadata.labels` (never into pod metadata). */
	readonly claimLabels?: Readonly<Record<string, string>>
	/** Fires once per connect attempt to the guest, before it is made. Must not throw. */
	readonly onDialAttempt?: (event: { readonly host: string; readonly port: number }) => void
	/**
	 * Told after every `exec()` where its time went: dial, reserve, execute and drain (ms). Never
	 * the token, the command or any output. Must not throw.
	 */
	readonly onExecTiming?: (timing: RemoteExecutionTiming) => void
	/**
	 * The egress the sandbox pods must be held to: translated to one policy an operator applies,
	 * verified on the cluster (never created by this backend), then every policy selecting the pod.
	 */
	readonly egress?: KubernetesEgressConfig
	/** Verification that a policy closes the agent port: on by default; `'unverified'` skips it. */
	readonly ingress?: KubernetesIngressConfig
}

export interface ResolvedKubernetesBackendConfig {
	readonly namespace: string
	readonly access: KubernetesClusterAccess
	readonly sandboxTemplateName: string
	readonly warmPoolName?: string
	readonly agentPort: number
	readonly agentAddress: KubernetesAgentAddressMode
	readonly readyPollIntervalMs: number
	readonly readyTimeoutMs: number
	readonly claimTtlSeconds: number
	readonly onLeaseRenewalError?: (error: Error) => void
	readonly apiRequestTimeoutMs?: number
	readonly streamHeartbeatMs: number
	readonly claimLabels: Readonly<Record<string, string>>
	readonly onDialAttempt?: (event: { readonly host: string; readonly port: number }) => void
	readonly onExecTiming?: (timing: RemoteExecutionTiming) => void
	readonly egress?: ResolvedEgressConfig
	readonly ingress: ResolvedIngressConfig
}

// Every key of the config, checked complete by the compiler: any other key is refused by name.
const BACKEND_KEYS = Object.keys({
	tier: true,
	service: true,
	namespace: true,
	access: true,
	sandboxTemplateName: true,
	warmPoolName: true,
	agentPort: true,
	agentAddress: true,
	readyPollIntervalMs: true,
	readyTimeoutMs: true,
	claimTtlSeconds: true,
	onLeaseRenewalError: true,
	apiRequestTimeoutMs: true,
	streamHeartbeatMs: true,
	claimLabels: true,
	onDialAttempt: true,
	onExecTiming: true,
	egress: true,
	ingress: true,
} satisfies Record<keyof KubernetesBackendConfig, true>)

export const DEFAULT_KUBERNETES_AGENT_PORT = 1024
export const DEFAULT_READY_POLL_INTERVAL_MS = 50
export const DEFAULT_KUBERNETES_READY_TIMEOUT_MS = 60_000
export const DEFAULT_CLAIM_TTL_SECONDS = 3600

/** DNS-1123 label (namespace) / subdomain (object names). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/

function name(field: string, value: unknown, pattern: RegExp, max: number): string {
	if (typeof value !== 'string' || value.length > max || !pattern.test(value)) {
		throw new SandboxConfigError(
			field,
			`must be a DNS-1123 name of at most ${max} characters, got ${JSON.stringify(value)}`,
		)
	}
	return value
}

function callback<T>(field: string, value: T | undefined): T | undefined {
	return optionalFunction(CONFIG_SITE, field, value)
}

function labels(value: unknown): Readonly<Record<string, string>> {
	if (value === undefined) return {}
	if (typeof value !== 'object' || value === null || Array.isArray(value)) {
		throw new SandboxConfigError('claimLabels', 'must be an object of label keys to values')
	}
	const out: Record<string, string> = {}
	for (const [key, label] of Object.entries(value)) {
		if (key.length > 317 || !LABEL_KEY.test(key)) {
			throw new SandboxConfigError('claimLabels', `invalid label key ${JSON.stringify(key)}`)
		}
		if (typeof label !== 'string' || label.length > 63 || !LABEL_VALUE.test(label)) {
			throw new SandboxConfigError(
				'claimLabels',
				`invalid value for ${key}: ${JSON.stringify(label)}`,
			)
		}
		out[key] = label
	}
	return out
}

function access(value: unknown): KubernetesClusterAccess {
	if (typeof value !== 'object' || value === null) {
		throw new SandboxConfigError(
			'access',
			'must be { inCluster: true }, { server, ca?, getToken } or { kubeconfig?, context? }',
		)
	}
	return value as KubernetesClusterAccess
}

/** Validates and fills defaults; throws `SandboxConfigError` naming the first bad field. */
export function resolveKubernetesBackendConfig(
	config: KubernetesBackendConfig,
): ResolvedKubernetesBackendConfig {
	const given = requireObject(CONFIG_SITE, 'backend', config)
	refuseUnknownKeys(CONFIG_SITE, 'backend', given, BACKEND_KEYS)
	if (config.tier !== 'microvm' || config.service !== 'kubernetes') {
		throw new SandboxConfigError('service', "must be 'kubernetes' with tier 'microvm'")
	}
	const agentAddress = requireOneOf(CONFIG_SITE, 'agentAddress', config.agentAddress ?? 'service', [
		'service',
		'pod-ip',
	] as const)
	const warmPoolName =
		config.warmPoolName === undefined
			? undefined
			: name('warmPoolName', config.warmPoolName, DNS_SUBDOMAIN, 253)
	const onLeaseRenewalError = callback('onLeaseRenewalError', config.onLeaseRenewalError)
	const onDialAttempt = callback('onDialAttempt', config.onDialAttempt)
	const onExecTiming = callback('onExecTiming', config.onExecTiming)
	const apiRequestTimeoutMs = optionalDurationMs(
		CONFIG_SITE,
		'apiRequestTimeoutMs',
		config.apiRequestTimeoutMs,
		{ min: 1000 },
	)
	const namespace = name('namespace', config.namespace, DNS_LABEL, 63)
	const sandboxTemplateName = name(
		'sandboxTemplateName',
		config.sandboxTemplateName,
		DNS_SUBDOMAIN,
		253,
	)
	const egress = resolveEgressConfig(given.egress, { namespace, sandboxTemplateName })
	return {
		namespace,
		access: access(config.access),
		sandboxTemplateName,
		...(warmPoolName === undefined ? {} : { warmPoolName }),
		agentPort:
			optionalInteger(CONFIG_SITE, 'agentPort', config.agentPort, { min: 1, max: 65_535 }) ??
			DEFAULT_KUBERNETES_AGENT_PORT,
		agentAddress,
		readyPollIntervalMs:
			optionalDurationMs(CONFIG_SITE, 'readyPollIntervalMs', config.readyPollIntervalMs) ??
			DEFAULT_READY_POLL_INTERVAL_MS,
		readyTimeoutMs:
			optionalDurationMs(CONFIG_SITE, 'readyTimeoutMs', config.readyTimeoutMs) ??
			DEFAULT_KUBERNETES_READY_TIMEOUT_MS,
		// The lease renews every half TTL and a timer cannot exceed MAX_TIMER_MS.
		claimTtlSeconds:
			optionalInteger(CONFIG_SITE, 'claimTtlSeconds', config.claimTtlSeconds, {
				min: 2,
				max: Math.floor(MAX_TIMER_MS / 1000),
			}) ?? DEFAULT_CLAIM_TTL_SECONDS,
		...(onLeaseRenewalError ? { onLeaseRenewalError } : {}),
		...(apiRequestTimeoutMs === undefined ? {} : { apiRequestTimeoutMs }),
		streamHeartbeatMs:
			optionalDurationMs(CONFIG_SITE, 'streamHeartbeatMs', config.streamHeartbeatMs, {
				min: 0,
			}) ?? DEFAULT_STREAM_HEARTBEAT_MS,
		claimLabels: labels(config.claimLabels),
		...(onDialAttempt ? { onDialAttempt } : {}),
		...(onExecTiming ? { onExecTiming } : {}),
		...(egress === undefined ? {} : { egress }),
		ingress: resolveIngressConfig(given.ingress),
	}
}
