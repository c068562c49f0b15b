/**
 * The pod `status` the kubelet reports, as a pure function of what the runtime observed. Truthful
 * means: `Running` only once a container process exists, `Ready`/`ContainersReady` only while the
 * agent's `healthz` answers, `restartCount` counting in-place restarts, the previous run kept in
 * `lastState`, and a condition's `lastTransitionTime` moving only when its status changes.
 */
import type {
	ContainerState,
	ContainerStateTerminated,
	ContainerStatus,
	PodCondition,
	PodStatus,
} from './kube-types.js'

export type ContainerPhase =
	| { readonly kind: 'waiting'; readonly reason: string; readonly message?: string }
	| { readonly kind: 'running'; readonly startedAt: string; readonly containerID: string }
	| ({ readonly kind: 'terminated' } & ContainerStateTerminated)

export interface ContainerSnapshot {
	readonly name: string
	readonly image: string
	readonly phase: ContainerPhase
	readonly lastTerminated?: ContainerStateTerminated
	/** The agent answered its last `healthz`. */
	readonly ready: boolean
	readonly restartCount: number
}

export interface PodSnapshot {
	readonly podIP?: string
	readonly hostIP: string
	readonly startTime: string
	/** The pod's network namespace exists with its address. */
	readonly sandboxReady: boolean
	readonly containers: readonly ContainerSnapshot[]
	/** Every container has stopped for good (restart policy, or deletion). */
	readonly finished: boolean
}

/** Image ID the status reports: there is no registry, the "image" is the host plus the agent. */
export const IMAGE_ID_PREFIX = 'namzu-process-kubelet://'

export function containerState(phase: ContainerPhase): ContainerState {
	switch (phase.kind) {
		case 'waiting':
			return {
				waiting: { reason: phase.reason, ...(phase.message ? { message: phase.message } : {}) },
			}
		case 'running':
			return { running: { startedAt: phase.startedAt } }
		case 'terminated': {
			const { kind: _kind, ...terminated } = phase
			return { terminated }
		}
	}
}

function containerStatus(container: ContainerSnapshot): ContainerStatus {
	const phase = container.phase
	const containerID =
		phase.kind === 'running' || phase.kind === 'terminated' ? phase.containerID : undefined
	return {
		name: container.name,
		image: container.image,
		imageID: `${IMAGE_ID_PREFIX}${container.image}`,
		...(containerID ? { containerID } : {}),
		ready: phase.kind === 'running' && container.ready,
		started: phase.kind === 'running',
		restartCount: container.restartCount,
		state: containerState(phase),
		lastState: container.lastTerminated ? { terminated: container.lastTerminated } : {},
	}
}

export function podPhase(snapshot: PodSnapshot): NonNullable<PodStatus['phase']> {
	if (snapshot.finished && snapshot.containers.length > 0) {
		const allZero = snapshot.containers.every(
			(c) => c.phase.kind === 'terminated' && c.phase.exitCode === 0,
		)
		return allZero ? 'Succeeded' : 'Failed'
	}
	const started = snapshot.containers.some(
		(c) => c.phase.kind !== 'waiting' || c.restartCount > 0 || c.lastTerminated !== undefined,
	)
	return started ? 'Running' : 'Pending'
}

interface ConditionValue {
	readonly status: PodCondition['status']
	readonly reason?: string
	readonly message?: string
}

/** Keeps the previous `lastTransitionTime` of a condition whose status did not change. */
export function condition(
	type: string,
	value: ConditionValue,
	previous: readonly PodCondition[],
	now: string,
): PodCondition {
	const before = previous.find((c) => c.type === type)
	const lastTransitionTime =
		before?.status === value.status && before.lastTransitionTime ? before.lastTransitionTime : now
	return {
		type,
		status: value.status,
		...(value.reason ? { reason: value.reason } : {}),
		...(value.message ? { message: value.message } : {}),
		lastProbeTime: null,
		lastTransitionTime,
	}
}

export function buildPodStatus(
	snapshot: PodSnapshot,
	previous: readonly PodCondition[],
	now: string,
): PodStatus {
	const phase = podPhase(snapshot)
	const unready = snapshot.containers
		.filter((c) => !(c.phase.kind === 'running' && c.ready))
		.map((c) => c.name)
	const containersReady: ConditionValue = snapshot.finished
		? { status: 'False', reason: 'PodCompleted' }
		: unready.length === 0
			? { status: 'True' }
			: {
					status: 'False',
					reason: 'ContainersNotReady',
					message: `containers with unready status: [${unready.join(' ')}]`,
				}
	const conditions = [
		condition(
			'PodReadyToStartContainers',
			{ status: snapshot.sandboxReady ? 'True' : 'False' },
			previous,
			now,
		),
		condition('Initialized', { status: 'True' }, previous, now),
		condition('Ready', containersReady, previous, now),
		condition('ContainersReady', containersReady, previous, now),
		condition('PodScheduled', { status: 'True' }, previous, now),
	]
	const ip = snapshot.podIP
	return {
		phase,
		conditions,
		hostIP: snapshot.hostIP,
		hostIPs: [{ ip: snapshot.hostIP }],
		...(ip ? { podIP: ip, podIPs: [{ ip }] } : {}),
		startTime: snapshot.startTime,
		containerStatuses: snapshot.containers.map(containerStatus),
	}
}

/** The status of a pod the kubelet refuses to bind (the `Unschedulable` fault). */
export function unschedulableConditions(
	previous: readonly PodCondition[],
	nodeName: string,
	now: string,
): PodCondition[] {
	return [
		condition(
			'PodScheduled',
			{
				status: 'False',
				reason: 'Unschedulable',
				message: `0/1 nodes are available: 1 node(s) were marked unschedulable for this pod by the test (${nodeName}).`,
			},
			previous,
			now,
		),
	]
}

/** Exit status → the `terminated` reason a runtime reports. */
export function terminationReason(exitCode: number, oomKilled = false): string {
	if (oomKilled) return 'OOMKilled'
	return exitCode === 0 ? 'Completed' : 'Error'
}
