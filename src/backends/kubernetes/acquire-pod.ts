/**
 * The last step of an acquire: the bound pod read on the same budget until it carries a uid (the
 * bind token), the labels this backend wrote (the controller may write them after the bind) and,
 * in `pod-ip` mode, an IP.
 */
import {
	KubernetesAcquireError,
	KubernetesPodUnusableError,
	ReadinessPollTimeout,
} from './acquire-errors.js'
import {
	type AcquiredTaskSandbox,
	type AcquireRun,
	type BoundPod,
	type CreatedObject,
	classifyAcquireFailure,
} from './acquire-run.js'
import type { ResolvedKubernetesBackendConfig } from './kubernetes-backend-config.js'
import { type KubernetesObject, kubernetesPaths } from './kubernetes-objects.js'
import { KubernetesPodLabelNotObservedError } from './network/network-errors.js'
import { podAddress } from './readiness.js'
import { type Judgement, pollUntil } from './readiness-poll.js'

interface PodReading {
	readonly uid: string
	readonly host: string
	readonly labels: Readonly<Record<string, string>>
}

interface MissingLabel {
	readonly key: string
	readonly value: string
	readonly observed: string | undefined
}

/** The labels the pod must show: a claimed pod all of them, a direct one the per-sandbox one. */
function requiredLabels(run: AcquireRun, object: CreatedObject): [string, string][] {
	if (object.kind === 'claim') return Object.entries(run.podLabels)
	if (run.perSandboxKey === undefined) return []
	return [[run.perSandboxKey, run.podLabels[run.perSandboxKey] ?? '']]
}

export async function readBoundPod(
	run: AcquireRun,
	sandboxName: string,
	object: CreatedObject,
): Promise<BoundPod> {
	const { api, config, signal } = run
	const ns = config.namespace
	const required = requiredLabels(run, object)
	let missing: MissingLabel | undefined
	const judge = (pod: KubernetesObject): Judgement<PodReading> => {
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
		const host = agentHost(config, sandboxName, podAddress(pod))
		if (host === undefined) return { done: false, observed: 'pod has no IP yet' }
		return { done: true, value: { uid, host, labels } }
	}
	const outcome = await pollUntil(
		`pod ${sandboxName}`,
		(readSignal) => api.get(kubernetesPaths.pod(ns, sandboxName), { signal: readSignal }),
		judge,
		{
			deadlineMs: run.deadlineMs,
			intervalMs: config.readyPollIntervalMs,
			now: run.now,
			...(signal ? { signal } : {}),
		},
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
		sandbox: boundSandbox(object, sandboxName, outcome.value.uid, outcome.value.host),
		podLabels: outcome.value.labels,
	}
}

/** Where the guest's agent is dialed: the Service FQDN, or (`pod-ip`) the pod's IP once it has one. */
export function agentHost(
	config: Pick<ResolvedKubernetesBackendConfig, 'agentAddress' | 'namespace'>,
	sandboxName: string,
	ip: string | undefined,
): string | undefined {
	const ns = config.namespace
	return config.agentAddress === 'service' ? `${sandboxName}.${ns}.svc.cluster.local` : ip
}

function boundSandbox(
	object: CreatedObject,
	sandboxName: string,
	token: string,
	host: string,
): AcquiredTaskSandbox {
	return {
		id: sandboxName,
		created: {
			kind: object.kind,
			path: object.path,
			name: object.name,
			...(object.uid === undefined ? {} : { uid: object.uid }),
		},
		podName: sandboxName,
		token,
		host,
	}
}

/**
 * The bound sandbox as a pod listed before the bind predicts it, for work that may start before the
 * pod read confirms it: none when the claim's mirrored pod IPs do not include the listed one (the
 * pod was replaced since). The pod read still decides what is handed out.
 */
export function anticipatedSandbox(
	run: AcquireRun,
	object: CreatedObject,
	bound: KubernetesObject,
	pod: { readonly name: string; readonly uid: string; readonly ip: string },
): AcquiredTaskSandbox | undefined {
	const mirrored = podIpsOf(bound)
	if (mirrored !== undefined && !mirrored.includes(pod.ip)) return undefined
	const host = agentHost(run.config, pod.name, pod.ip)
	return host === undefined ? undefined : boundSandbox(object, pod.name, pod.uid, host)
}

/** A bound claim's `status.sandbox.podIPs`, when it carries them. */
function podIpsOf(claim: KubernetesObject): readonly string[] | undefined {
	const sandbox = claim.status?.sandbox
	const ips =
		typeof sandbox === 'object' && sandbox !== null
			? (sandbox as { podIPs?: unknown }).podIPs
			: undefined
	if (!Array.isArray(ips)) return undefined
	return ips.filter((ip): ip is string => typeof ip === 'string')
}
