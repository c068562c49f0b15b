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
	type AcquireRun,
	type BoundPod,
	type CreatedObject,
	classifyAcquireFailure,
} from './acquire-run.js'
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
		if (config.agentAddress === 'service') {
			return { done: true, value: { uid, host: `${sandboxName}.${ns}.svc.cluster.local`, labels } }
		}
		const ip = podAddress(pod)
		if (ip === undefined) return { done: false, observed: 'pod has no IP yet' }
		return { done: true, value: { uid, host: ip, labels } }
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
		sandbox: {
			id: sandboxName,
			created: {
				kind: object.kind,
				path: object.path,
				name: object.name,
				...(object.uid === undefined ? {} : { uid: object.uid }),
			},
			podName: sandboxName,
			token: outcome.value.uid,
			host: outcome.value.host,
		},
		podLabels: outcome.value.labels,
	}
}
