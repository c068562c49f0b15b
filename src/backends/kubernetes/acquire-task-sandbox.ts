/**
 * One acquire, from nothing to a bound, ready pod with its bind token and agent address: POST a
 * pristine claim (warm pool) or a Sandbox from the template (no pool) — never retried — then poll
 * readiness on one budget, then one pod GET for the uid (and, in `pod-ip` mode, its IP, waited for
 * on the same budget). Every failure after the POST deletes what it created on a separate short
 * budget (gone counts as released) before rejecting with `KubernetesAcquireError`, or with the
 * original error when the taxonomy cannot honestly name it.
 */
import {
	KubernetesAcquireError,
	KubernetesClaimUnboundError,
	KubernetesPodUnusableError,
	ReadinessPollTimeout,
	ReadinessReadCutError,
} from './acquire-errors.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from './kubernetes-backend-config.js'
import {
	buildDirectSandbox,
	buildSandboxClaim,
	directSandboxPodLabels,
	generateObjectName,
	type KubernetesObject,
	kubernetesPaths,
	shutdownTimeAt,
} from './kubernetes-objects.js'
import {
	KubernetesPodLabelNotObservedError,
	KubernetesPodLabelsRejectedError,
} from './network/network-errors.js'
import {
	acquireReasonForApiFailure,
	apiFailureShape,
	boundSandboxName,
	diagnosePod,
	evaluateClaimReadiness,
	evaluateSandboxReadiness,
	nextPollDelayMs,
	podAddress,
	type ReadinessVerdict,
} from './readiness.js'
import { type Judgement, pollUntil } from './readiness-poll.js'
import { watchUntil } from './readiness-watch.js'

/** Budget of the cleanup DELETE after a failed acquire, independent of the caller's signal. */
export const ACQUIRE_CLEANUP_TIMEOUT_MS = 5000

export interface AcquiredTaskSandbox {
	/** The bound Sandbox's cluster name (`kubectl get sandbox <id>`). */
	readonly id: string
	/** What this acquire created and destroy deletes. */
	readonly created: {
		readonly kind: 'claim' | 'sandbox'
		readonly path: string
		readonly name: string
		/** The created object's `metadata.uid` as the POST answered it; absent when it carried none. */
		readonly uid?: string
	}
	readonly podName: string
	/** The pod's `metadata.uid`: the agent's bind token. */
	readonly token: string
	/** Service FQDN or pod IP, per `agentAddress`. */
	readonly host: string
}

/** The network checks (network/network-verifier.ts), given the labels the pod carries. */
export interface AcquireNetworkChecks {
	/** Before anything is created: the named egress object. */
	prepare(signal?: AbortSignal): Promise<void>
	verify(podLabels: Readonly<Record<string, string>>, signal?: AbortSignal): Promise<void>
}

export interface AcquireDependencies {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	/** Run before the POST of a direct Sandbox, and after a claim binds (a refusal releases it). */
	readonly network?: AcquireNetworkChecks
	/**
	 * Work on the bound sandbox run while a claim's network check is in flight (the provider's
	 * dial and privilege probe), so the check's API round trip is off the acquire's critical path.
	 * It must not reject; the acquire settles only after it has, and a refused check still
	 * releases the claim.
	 */
	readonly whileVerifying?: (sandbox: AcquiredTaskSandbox) => Promise<void>
	readonly now?: () => number
	readonly wallClock?: () => number
}

/** Maps an API failure to the taxonomy, or hands it back as itself. */
export function classifyAcquireFailure(error: unknown, objectName?: string): unknown {
	if (error instanceof KubernetesAcquireError) return error
	const reason =
		error instanceof ReadinessReadCutError
			? 'api-timeout'
			: acquireReasonForApiFailure(apiFailureShape(error))
	if (reason === undefined) return error
	return new KubernetesAcquireError(reason, {
		cause: error,
		...(objectName === undefined ? {} : { objectName }),
	})
}

async function cleanupDelete(api: KubernetesApiPort, path: string): Promise<void> {
	try {
		await api.delete(path, { signal: AbortSignal.timeout(ACQUIRE_CLEANUP_TIMEOUT_MS) })
	} catch {
		// Best effort: the object's shutdownTime reaps it if this DELETE did not land.
	}
}

/** The controller refused a claim for its metadata: what was asked for rides as the cause. */
const METADATA_REFUSAL = 'InvalidMetadata'

function judged(
	verdict: ReadinessVerdict,
	objectName: string,
	requestedPodLabels: Readonly<Record<string, string>> | undefined,
	profileLabelKey: string | undefined,
): Judgement<string> {
	switch (verdict.state) {
		case 'ready':
			return { done: true, value: verdict.sandboxName }
		case 'pending':
			return { done: false, observed: verdict.observed }
		case 'rejected':
			throw new KubernetesAcquireError('claim-rejected', {
				controllerReason: verdict.controllerReason,
				controllerMessage: verdict.controllerMessage,
				objectName,
				...(verdict.controllerReason === METADATA_REFUSAL && requestedPodLabels !== undefined
					? { cause: new KubernetesPodLabelsRejectedError(requestedPodLabels, profileLabelKey) }
					: {}),
			})
		case 'ready-without-sandbox':
			throw new KubernetesClaimUnboundError(objectName)
	}
}

/** Acquires one task sandbox; see the module comment. */
export async function acquireTaskSandbox(
	deps: AcquireDependencies,
	signal?: AbortSignal,
): Promise<AcquiredTaskSandbox> {
	const { api, config } = deps
	const now = deps.now ?? (() => performance.now())
	const wallClock = deps.wallClock ?? (() => Date.now())
	const ns = config.namespace
	signal?.throwIfAborted()
	const deadlineMs = now() + config.readyTimeoutMs
	const shutdownTime = shutdownTimeAt(wallClock(), config.claimTtlSeconds)
	const profile = config.egress?.profile
	const profileLabels: Record<string, string> =
		profile === undefined ? {} : { [profile.key]: profile.value }
	const perSandboxKey = config.egress?.perSandbox?.labelKey
	// The labels this backend writes onto the pod, confirmed on it before the sandbox is handed out.
	let podLabels: Record<string, string> = profileLabels
	const withPerSandboxLabel = (name: string): Record<string, string> => {
		podLabels =
			perSandboxKey === undefined ? profileLabels : { ...profileLabels, [perSandboxKey]: name }
		return podLabels
	}

	if (deps.network) {
		try {
			await deps.network.prepare(signal)
		} catch (error) {
			signal?.throwIfAborted()
			throw classifyAcquireFailure(error)
		}
	}
	let created: CreatedObject
	if (config.warmPoolName !== undefined) {
		const name = generateObjectName('namzu-task')
		const body = buildSandboxClaim({
			name,
			warmPoolName: config.warmPoolName,
			shutdownTime,
			claimLabels: config.claimLabels,
			podLabels: withPerSandboxLabel(name),
		})
		const collectionPath = kubernetesPaths.claims(ns)
		const path = kubernetesPaths.claim(ns, name)
		const answer = await post(collectionPath, body, path, name)
		created = { kind: 'claim', path, name, collectionPath, ...answer }
	} else {
		let template: KubernetesObject
		try {
			template = await api.get(kubernetesPaths.template(ns, config.sandboxTemplateName), {
				...(signal ? { signal } : {}),
			})
		} catch (error) {
			signal?.throwIfAborted()
			throw classifyAcquireFailure(error)
		}
		const name = generateObjectName('namzu-task')
		const body = buildDirectSandbox({
			name,
			templateName: config.sandboxTemplateName,
			template,
			shutdownTime,
			podLabels: withPerSandboxLabel(name),
		})
		if (deps.network) {
			// Before the POST, so a refusal leaves nothing behind.
			try {
				await deps.network.verify(directSandboxPodLabels(body), signal)
			} catch (error) {
				signal?.throwIfAborted()
				throw classifyAcquireFailure(error)
			}
		}
		const collectionPath = kubernetesPaths.sandboxes(ns)
		const path = kubernetesPaths.sandbox(ns, name)
		const answer = await post(collectionPath, body, path, name)
		created = { kind: 'sandbox', path, name, collectionPath, ...answer }
	}

	try {
		const acquired = await bindAndResolve(created)
		if (created.kind === 'claim' && deps.network) {
			const alongside = deps.whileVerifying?.(acquired.sandbox)
			try {
				await deps.network.verify(acquired.podLabels, signal)
			} finally {
				await alongside
			}
		}
		return acquired.sandbox
	} catch (error) {
		await cleanupDelete(api, created.path)
		signal?.throwIfAborted()
		throw classifyAcquireFailure(error, created.name)
	}

	/**
	 * POSTs once; resolves with the created object's `resourceVersion` (what a watch starts from)
	 * and `uid` (what a per-sandbox policy is named after and owned by).
	 */
	async function post(
		collection: string,
		body: object,
		path: string,
		name: string,
	): Promise<{ resourceVersion: string | undefined; uid?: string }> {
		try {
			const object = await api.create(collection, body, { ...(signal ? { signal } : {}) })
			const version = object?.metadata?.resourceVersion
			const uid = object?.metadata?.uid
			return {
				resourceVersion: typeof version === 'string' && version !== '' ? version : undefined,
				...(typeof uid === 'string' && uid !== '' ? { uid } : {}),
			}
		} catch (error) {
			// The POST is never retried; one that may have committed (no answer) is deleted by name.
			const shape = apiFailureShape(error)
			if (shape?.kind !== 'connect' && !(shape?.kind === 'status' && shape.status < 500)) {
				await cleanupDelete(api, path)
			}
			signal?.throwIfAborted()
			throw classifyAcquireFailure(error, name)
		}
	}

	async function bindAndResolve(object: CreatedObject): Promise<BoundPod> {
		const budget = {
			deadlineMs,
			intervalMs: config.readyPollIntervalMs,
			now,
			...(signal ? { signal } : {}),
		}
		const evaluate = object.kind === 'claim' ? evaluateClaimReadiness : evaluateSandboxReadiness
		// A cold-started claim's Sandbox is named like the claim; a bound one names it in status.
		let podName = object.name
		const judge = (read: KubernetesObject): Judgement<string> => {
			if (object.kind === 'claim') podName = boundSandboxName(read) ?? podName
			return judged(
				evaluate(read),
				object.name,
				object.kind === 'claim' ? podLabels : undefined,
				profile?.key,
			)
		}
		// Watched from the create's version; polled for the rest of the budget when it cannot be.
		const watched = await watchUntil(api, object, judge, budget)
		const outcome =
			watched.kind === 'fallback'
				? await pollUntil(
						`${object.kind === 'claim' ? 'SandboxClaim' : 'Sandbox'} ${object.name}`,
						(readSignal) => api.get(object.path, { signal: readSignal }),
						judge,
						{ ...budget, firstReadAfterMs: retryAfterOf(watched.cause) },
					)
				: watched
		if (outcome.kind === 'timeout') {
			// One pod read after the budget, before the cleanup: the pod condition decides.
			const diagnosis = await diagnose(podName)
			if (diagnosis) {
				throw new KubernetesAcquireError(diagnosis.reason, {
					cause: new ReadinessPollTimeout(object.name, config.readyTimeoutMs, diagnosis.detail),
					objectName: object.name,
				})
			}
			if (outcome.standingFailure !== undefined) {
				const classified = classifyAcquireFailure(outcome.standingFailure, object.name)
				if (classified instanceof KubernetesAcquireError) throw classified
			}
			throw new KubernetesAcquireError('not-ready', {
				cause: new ReadinessPollTimeout(
					`${object.kind === 'claim' ? 'SandboxClaim' : 'Sandbox'} ${object.name}`,
					config.readyTimeoutMs,
					outcome.lastObserved,
				),
				objectName: object.name,
			})
		}
		const sandboxName = outcome.value
		return readPod(sandboxName, object)
	}

	async function diagnose(
		podName: string,
	): Promise<{ reason: 'capacity' | 'image-pull'; detail: string } | undefined> {
		try {
			const pod = await api.get(kubernetesPaths.pod(ns, podName), {
				signal: AbortSignal.timeout(ACQUIRE_CLEANUP_TIMEOUT_MS),
			})
			return diagnosePod(pod)
		} catch {
			return undefined
		}
	}

	async function readPod(sandboxName: string, object: CreatedObject): Promise<BoundPod> {
		const podPath = kubernetesPaths.pod(ns, sandboxName)
		const result = {
			id: sandboxName,
			created: {
				kind: object.kind,
				path: object.path,
				name: object.name,
				...(object.uid === undefined ? {} : { uid: object.uid }),
			},
		}
		// A claimed pod gets the profile label from the controller; the per-sandbox label is checked
		// on either path, since the policy written later selects by it alone.
		const required = Object.entries(
			object.kind === 'claim'
				? podLabels
				: perSandboxKey === undefined
					? {}
					: { [perSandboxKey]: podLabels[perSandboxKey] ?? '' },
		)
		let missing: { key: string; value: string; observed: string | undefined } | undefined
		const judge = (
			pod: KubernetesObject,
		): Judgement<{ uid: string; host: string; labels: Readonly<Record<string, string>> }> => {
			const uid = pod.metadata.uid
			if (typeof uid !== 'string' || uid === '') {
				throw new KubernetesPodUnusableError(sandboxName, 'has no metadata.uid')
			}
			const labels = pod.metadata.labels ?? {}
			// Waited for on the budget: the controller may write them after the bind.
			missing = undefined
			for (const [key, value] of required) {
				if (labels[key] !== value) {
					missing = { key, value, observed: labels[key] }
					return { done: false, observed: `pod lacks ${key}=${value}` }
				}
			}
			if (config.agentAddress === 'service') {
				const host = `${sandboxName}.${ns}.svc.cluster.local`
				return { done: true, value: { uid, host, labels } }
			}
			const ip = podAddress(pod)
			if (ip === undefined) return { done: false, observed: 'pod has no IP yet' }
			return { done: true, value: { uid, host: ip, labels } }
		}
		const outcome = await pollUntil(
			`pod ${sandboxName}`,
			(readSignal) => api.get(podPath, { signal: readSignal }),
			judge,
			{ deadlineMs, intervalMs: config.readyPollIntervalMs, now, ...(signal ? { signal } : {}) },
		)
		if (outcome.kind === 'timeout') {
			if (outcome.standingFailure !== undefined) {
				const classified = classifyAcquireFailure(outcome.standingFailure, object.name)
				if (classified instanceof KubernetesAcquireError) throw classified
			}
			if (missing !== undefined) {
				throw new KubernetesPodLabelNotObservedError(
					sandboxName,
					missing.key,
					missing.value,
					missing.observed,
				)
			}
			throw new KubernetesAcquireError('not-ready', {
				cause: new ReadinessPollTimeout(
					`pod ${sandboxName} IP`,
					config.readyTimeoutMs,
					outcome.lastObserved,
				),
				objectName: object.name,
			})
		}
		return {
			sandbox: {
				...result,
				podName: sandboxName,
				token: outcome.value.uid,
				host: outcome.value.host,
			},
			podLabels: outcome.value.labels,
		}
	}
}

/** A throttled watch's `Retry-After`, honoured before the poll's first read; else none. */
function retryAfterOf(cause: unknown): number {
	return nextPollDelayMs(0, apiFailureShape(cause))
}

interface CreatedObject {
	readonly kind: 'claim' | 'sandbox'
	readonly path: string
	readonly name: string
	readonly collectionPath: string
	readonly resourceVersion: string | undefined
	readonly uid?: string
}

interface BoundPod {
	readonly sandbox: AcquiredTaskSandbox
	/** The pod's real labels, as read after the bind. */
	readonly podLabels: Readonly<Record<string, string>>
}
