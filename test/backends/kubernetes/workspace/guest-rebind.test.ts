import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	decideAfterRefusal,
	type RefusedCallDecision,
} from '../../../../src/backends/kubernetes/workspace/guest-rebind.js'

const sandbox = (uid: string, operatingMode = 'Running'): KubernetesObject => ({
	metadata: { name: 'namzu-ws-a', uid },
	spec: { operatingMode },
})
const pod = (uid: string, extra: { phase?: string; deleting?: boolean; ip?: string } = {}) =>
	({
		metadata: {
			name: 'namzu-ws-a',
			uid,
			...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
		},
		status: {
			phase: extra.phase ?? 'Running',
			...(extra.ip === undefined ? {} : { podIP: extra.ip }),
		},
	}) as KubernetesObject

const ipOf = (object: KubernetesObject) => {
	const ip = object.status?.podIP
	return typeof ip === 'string' ? ip : undefined
}

describe('decideAfterRefusal', () => {
	const table: Array<
		[
			string,
			KubernetesObject | undefined,
			KubernetesObject | undefined,
			RefusedCallDecision['kind'],
			Partial<RefusedCallDecision>?,
		]
	> = [
		[
			'R15-1d46ef4-02: same Sandbox uid, a live pod of another uid → rebind',
			sandbox('sb-1'),
			pod('pod-b', { ip: '10.0.0.2' }),
			'rebind',
			{ podUid: 'pod-b', host: '10.0.0.2' },
		],
		[
			'R15-1d46ef4-03: the same pod uid → the original error',
			sandbox('sb-1'),
			pod('pod-a', { ip: '10.0.0.1' }),
			'unchanged',
		],
		[
			'R15-1d46ef4-04: another Sandbox uid → replaced, no rebind',
			sandbox('sb-2'),
			pod('pod-b', { ip: '10.0.0.2' }),
			'replaced',
			{ observedSandboxUid: 'sb-2' },
		],
		['R15-1d46ef4-04: no Sandbox at all → replaced', undefined, undefined, 'replaced'],
		[
			'R15-1d46ef4-18: suspended by another process → suspended',
			sandbox('sb-1', 'Suspended'),
			undefined,
			'suspended',
		],
		[
			'a replacement still being deleted is not followed',
			sandbox('sb-1'),
			pod('pod-b', { ip: '10.0.0.2', deleting: true }),
			'unchanged',
		],
		[
			'a replacement in a terminal phase is not followed',
			sandbox('sb-1'),
			pod('pod-b', { ip: '10.0.0.2', phase: 'Failed' }),
			'unchanged',
		],
		[
			'a replacement without an address yet is not followed',
			sandbox('sb-1'),
			pod('pod-b'),
			'unchanged',
		],
		['no pod under the name', sandbox('sb-1'), undefined, 'unchanged'],
	]
	it.each(table)('%s', (_title, sandboxObject, podObject, kind, fields) => {
		const decision = decideAfterRefusal({
			expectedSandboxUid: 'sb-1',
			currentPodUid: 'pod-a',
			sandbox: sandboxObject,
			pod: podObject,
			addressOf: ipOf,
		})
		expect(decision.kind).toBe(kind)
		if (fields) expect(decision).toMatchObject(fields)
	})

	it('a Service FQDN address follows a replaced pod to the same name', () => {
		const decision = decideAfterRefusal({
			expectedSandboxUid: 'sb-1',
			currentPodUid: 'pod-a',
			sandbox: sandbox('sb-1'),
			pod: pod('pod-b'),
			addressOf: () => 'namzu-ws-a.ns.svc.cluster.local',
		})
		expect(decision).toEqual({
			kind: 'rebind',
			podUid: 'pod-b',
			host: 'namzu-ws-a.ns.svc.cluster.local',
		})
	})
})
