import { describe, expect, it } from 'vitest'
import {
	buildPodStatus,
	type ContainerSnapshot,
	condition,
	type PodSnapshot,
	podPhase,
	terminationReason,
	unschedulableConditions,
} from './pod-status.js'
import { exitCodeOf, restartBackoffMs, shouldRestart } from './restart-policy.js'

const T0 = '2026-11-29T10:00:00.000Z'
const T1 = '2026-11-29T10:00:05.000Z'

function container(extra: Partial<ContainerSnapshot> = {}): ContainerSnapshot {
	return {
		name: 'agent',
		image: 'namzu/agent:1',
		phase: { kind: 'running', startedAt: T0, containerID: 'namzu://abc' },
		ready: true,
		restartCount: 0,
		...extra,
	}
}

function snapshot(extra: Partial<PodSnapshot> = {}): PodSnapshot {
	return {
		podIP: '10.244.80.2',
		hostIP: '10.244.80.1',
		startTime: T0,
		sandboxReady: true,
		containers: [container()],
		finished: false,
		...extra,
	}
}

const creating = container({
	phase: { kind: 'waiting', reason: 'ContainerCreating' },
	ready: false,
})

describe('pod phase', () => {
	it.each<[string, Partial<PodSnapshot>, string]>([
		['never started', { containers: [creating] }, 'Pending'],
		[
			'image pull failing',
			{
				containers: [
					container({ phase: { kind: 'waiting', reason: 'ErrImagePull' }, ready: false }),
				],
			},
			'Pending',
		],
		['running', {}, 'Running'],
		['running, not ready', { containers: [container({ ready: false })] }, 'Running'],
		[
			'crash-looping after a run',
			{
				containers: [
					container({
						phase: { kind: 'waiting', reason: 'CrashLoopBackOff' },
						restartCount: 1,
						ready: false,
					}),
				],
			},
			'Running',
		],
		[
			'finished with 0',
			{ finished: true, containers: [container({ phase: { kind: 'terminated', exitCode: 0 } })] },
			'Succeeded',
		],
		[
			'finished with 137',
			{ finished: true, containers: [container({ phase: { kind: 'terminated', exitCode: 137 } })] },
			'Failed',
		],
		['finished before starting', { finished: true, containers: [creating] }, 'Failed'],
	])('%s → %s', (_what, extra, phase) => {
		expect(podPhase(snapshot(extra))).toBe(phase)
	})
})

describe('pod status', () => {
	it('reports a ready pod with its address, container status and all conditions True', () => {
		const status = buildPodStatus(snapshot(), [], T0)
		expect(status).toMatchObject({
			phase: 'Running',
			podIP: '10.244.80.2',
			podIPs: [{ ip: '10.244.80.2' }],
			hostIP: '10.244.80.1',
			hostIPs: [{ ip: '10.244.80.1' }],
			startTime: T0,
			containerStatuses: [
				{
					name: 'agent',
					image: 'namzu/agent:1',
					imageID: 'namzu-process-kubelet://namzu/agent:1',
					containerID: 'namzu://abc',
					ready: true,
					started: true,
					restartCount: 0,
					state: { running: { startedAt: T0 } },
					lastState: {},
				},
			],
		})
		expect(status.conditions?.map((c) => [c.type, c.status])).toEqual([
			['PodReadyToStartContainers', 'True'],
			['Initialized', 'True'],
			['Ready', 'True'],
			['ContainersReady', 'True'],
			['PodScheduled', 'True'],
		])
	})

	it('is not Ready while the agent has not answered healthz, naming the unready container', () => {
		const status = buildPodStatus(snapshot({ containers: [container({ ready: false })] }), [], T0)
		expect(status.conditions?.find((c) => c.type === 'Ready')).toEqual({
			type: 'Ready',
			status: 'False',
			reason: 'ContainersNotReady',
			message: 'containers with unready status: [agent]',
			lastProbeTime: null,
			lastTransitionTime: T0,
		})
		expect(status.containerStatuses?.[0]?.ready).toBe(false)
	})

	it('carries the restart count and the previous run in lastState while backing off', () => {
		const last = {
			exitCode: 137,
			reason: 'Error',
			startedAt: T0,
			finishedAt: T1,
			containerID: 'namzu://abc',
		}
		const status = buildPodStatus(
			snapshot({
				containers: [
					container({
						phase: { kind: 'waiting', reason: 'CrashLoopBackOff', message: 'back-off 200ms' },
						lastTerminated: last,
						restartCount: 1,
						ready: false,
					}),
				],
			}),
			[],
			T1,
		)
		expect(status.containerStatuses?.[0]).toMatchObject({
			restartCount: 1,
			started: false,
			ready: false,
			state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 200ms' } },
			lastState: { terminated: last },
		})
		expect(status.containerStatuses?.[0]?.containerID).toBeUndefined()
	})

	it('keeps a condition lastTransitionTime until its status changes', () => {
		const first = buildPodStatus(snapshot(), [], T0)
		const same = buildPodStatus(snapshot(), first.conditions ?? [], T1)
		expect(same.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(T0)
		const changed = buildPodStatus(
			snapshot({ containers: [container({ ready: false })] }),
			first.conditions ?? [],
			T1,
		)
		expect(changed.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(T1)
		expect(
			condition('X', { status: 'True' }, [{ type: 'X', status: 'True' }], T1).lastTransitionTime,
		).toBe(T1)
	})

	it('reports a finished pod as completed, not ready', () => {
		const status = buildPodStatus(
			snapshot({
				finished: true,
				containers: [
					container({
						phase: { kind: 'terminated', exitCode: 0, reason: 'Completed' },
						ready: false,
					}),
				],
			}),
			[],
			T1,
		)
		expect(status.phase).toBe('Succeeded')
		expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
			status: 'False',
			reason: 'PodCompleted',
		})
		expect(status.containerStatuses?.[0]?.state).toEqual({
			terminated: { exitCode: 0, reason: 'Completed' },
		})
	})

	it('marks an unbound pod PodScheduled=False, reason Unschedulable', () => {
		expect(unschedulableConditions([], 'node-1', T0)).toEqual([
			expect.objectContaining({ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }),
		])
	})
})

describe('restart policy', () => {
	it.each<[undefined | 'Always' | 'OnFailure' | 'Never', number, boolean]>([
		[undefined, 0, true],
		['Always', 0, true],
		['Always', 1, true],
		['OnFailure', 0, false],
		['OnFailure', 137, true],
		['Never', 1, false],
	])('%s with exit %i restarts: %s', (policy, exitCode, expected) => {
		expect(shouldRestart(policy, exitCode)).toBe(expected)
	})

	it.each([
		[0, 100],
		[1, 200],
		[3, 800],
		[5, 2000],
		[50, 2000],
	])('backs off restart %i by %i ms', (count, ms) => {
		expect(restartBackoffMs(count)).toBe(ms)
	})

	it.each<[number | null, NodeJS.Signals | null, number]>([
		[0, null, 0],
		[3, null, 3],
		[null, 'SIGKILL', 137],
		[null, 'SIGTERM', 143],
	])('exit %s / signal %s reports exit code %i', (code, signal, expected) => {
		expect(exitCodeOf(code, signal)).toBe(expected)
	})

	it.each([
		[0, 'Completed'],
		[1, 'Error'],
		[137, 'Error'],
	])('exit %i is reported as %s', (code, reason) => {
		expect(terminationReason(code)).toBe(reason)
	})
})
