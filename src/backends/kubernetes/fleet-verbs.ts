/**
 * The fleet verbs of the task path, for a host recovering from a crashed predecessor and for
 * admission control: `releaseKubernetesTaskSandboxes` LISTs claims by a REQUIRED, non-empty label
 * selector (refused before any request — a release matching everything would delete a live fleet's
 * work) and DELETEs each; `readKubernetesTaskCapacity` is three GETs and no write: the warm pool,
 * the claims (counted for that pool) and the Pending pods.
 */
import { callSite, optionalSignal, signalOfOptions } from '../../contract/argument-validators.js'
import { SandboxConfigError } from '../../contract/errors.js'
import { createKubernetesClient } from './api/create-kubernetes-client.js'
import { apiPortOf } from './client-port.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import {
	type KubernetesBackendConfig,
	type ResolvedKubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from './kubernetes-backend-config.js'
import { type KubernetesObject, kubernetesPaths } from './kubernetes-objects.js'

export interface ReleaseKubernetesTaskSandboxesOptions {
	/** Required and non-empty, e.g. `host.example.com/instance=web-7`. */
	readonly labelSelector: string
	readonly signal?: AbortSignal
}

export interface ReleasedKubernetesTaskSandboxes {
	readonly deleted: number
	readonly names: readonly string[]
}

export interface KubernetesTaskCapacity {
	readonly warmPool: { readonly ready: number; readonly desired: number }
	/** Claims naming the configured pool that are not being deleted. */
	readonly activeClaims: number
	/** Pods of the namespace in phase `Pending`. */
	readonly pendingPods: number
}

export interface KubernetesFleetOptions {
	readonly signal?: AbortSignal
}

/** Injected API for tests; the default builds a client from `config.access`. */
export interface FleetDependencies {
	readonly api?: KubernetesApiPort
}

/** The API port a fleet verb talks through: the injected one, or a client from `config.access`. */
export function connect(
	config: ResolvedKubernetesBackendConfig,
	dependencies: FleetDependencies,
): KubernetesApiPort {
	return (
		dependencies.api ??
		apiPortOf(
			createKubernetesClient(config.access, {
				...(config.apiRequestTimeoutMs === undefined
					? {}
					: { apiRequestTimeoutMs: config.apiRequestTimeoutMs }),
			}),
		)
	)
}

function withSignal(signal: AbortSignal | undefined): { signal?: AbortSignal } {
	return signal ? { signal } : {}
}

/** LIST claims by `labelSelector`, DELETE each (already gone counts); resolves with their names. */
export async function releaseKubernetesTaskSandboxes(
	config: KubernetesBackendConfig,
	options: ReleaseKubernetesTaskSandboxesOptions,
): Promise<ReleasedKubernetesTaskSandboxes>
/** @internal Tests replace the API client. */
export async function releaseKubernetesTaskSandboxes(
	config: KubernetesBackendConfig,
	options: ReleaseKubernetesTaskSandboxesOptions,
	dependencies: FleetDependencies,
): Promise<ReleasedKubernetesTaskSandboxes>
export async function releaseKubernetesTaskSandboxes(
	config: KubernetesBackendConfig,
	options: ReleaseKubernetesTaskSandboxesOptions,
	dependencies: FleetDependencies = {},
): Promise<ReleasedKubernetesTaskSandboxes> {
	const selector: unknown = options?.labelSelector
	if (typeof selector !== 'string' || selector.trim() === '') {
		throw new SandboxConfigError(
			'labelSelector',
			'is required and must be non-empty: a release matching every claim would delete work it does not own',
		)
	}
	const resolved = resolveKubernetesBackendConfig(config)
	const site = callSite('releaseKubernetesTaskSandboxes')
	optionalSignal(site, 'options.signal', options.signal)?.throwIfAborted()
	const api = connect(resolved, dependencies)
	const claims = await api.list(kubernetesPaths.claims(resolved.namespace), {
		labelSelector: selector,
		...withSignal(options.signal),
	})
	const names: string[] = []
	for (const claim of claims.items) {
		const name = claim.metadata.name
		if (name === undefined) continue
		await api.delete(kubernetesPaths.claim(resolved.namespace, name), withSignal(options.signal))
		names.push(name)
	}
	return { deleted: names.length, names }
}

function count(value: unknown): number {
	return typeof value === 'number' && Number.isFinite(value) ? value : 0
}

function poolOf(claim: KubernetesObject): unknown {
	const ref = claim.spec?.warmPoolRef
	return typeof ref === 'object' && ref !== null ? (ref as { name?: unknown }).name : undefined
}

/** Warm-pool headroom before admitting more work; requires `warmPoolName`. */
export async function readKubernetesTaskCapacity(
	config: KubernetesBackendConfig,
	options?: KubernetesFleetOptions,
): Promise<KubernetesTaskCapacity>
/** @internal Tests replace the API client. */
export async function readKubernetesTaskCapacity(
	config: KubernetesBackendConfig,
	options: KubernetesFleetOptions,
	dependencies: FleetDependencies,
): Promise<KubernetesTaskCapacity>
export async function readKubernetesTaskCapacity(
	config: KubernetesBackendConfig,
	options: KubernetesFleetOptions = {},
	dependencies: FleetDependencies = {},
): Promise<KubernetesTaskCapacity> {
	signalOfOptions(callSite('readKubernetesTaskCapacity'), options)
	const resolved = resolveKubernetesBackendConfig(config)
	const pool = resolved.warmPoolName
	if (pool === undefined) {
		throw new SandboxConfigError(
			'warmPoolName',
			'readKubernetesTaskCapacity needs a warm pool to report on (this backend creates every sandbox directly)',
		)
	}
	options.signal?.throwIfAborted()
	const api = connect(resolved, dependencies)
	const ns = resolved.namespace
	const signal = withSignal(options.signal)
	const warmPool = await api.get(kubernetesPaths.warmPool(ns, pool), signal)
	const claims = await api.list(kubernetesPaths.claims(ns), signal)
	const pending = await api.list(kubernetesPaths.pods(ns), {
		fieldSelector: 'status.phase=Pending',
		...signal,
	})
	return {
		warmPool: {
			ready: count(warmPool.status?.readyReplicas),
			desired: count(warmPool.spec?.replicas),
		},
		activeClaims: claims.items.filter(
			(claim) => poolOf(claim) === pool && claim.metadata.deletionTimestamp === undefined,
		).length,
		pendingPods: pending.items.filter(
			(pod) => pod.status?.phase === undefined || pod.status.phase === 'Pending',
		).length,
	}
}
