import { describe, expect, it } from 'vitest'
import {
	leaseObject,
	microTime,
	NODE_LABEL,
	nodeObject,
	nodeStatus,
	withoutLifecycleTaints,
} from './node-registration.js'

describe('node registration', () => {
	it('labels the node as a linux process-kubelet node', () => {
		expect(nodeObject('n1')).toMatchObject({
			kind: 'Node',
			metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', [NODE_LABEL]: 'true' } },
		})
	})

	it('reports Ready with a fresh heartbeat, no pressure, and the bridge address as InternalIP', () => {
		const status = nodeStatus('n1', '10.244.80.1', '2026-11-29T10:00:00Z') as {
			status: {
				conditions: { type: string; status: string; lastHeartbeatTime: string }[]
				addresses: object[]
			}
		}
		expect(status.status.conditions.map((c) => [c.type, c.status])).toEqual([
			['MemoryPressure', 'False'],
			['DiskPressure', 'False'],
			['PIDPressure', 'False'],
			['Ready', 'True'],
		])
		expect(
			status.status.conditions.every((c) => c.lastHeartbeatTime === '2026-11-29T10:00:00Z'),
		).toBe(true)
		expect(status.status.addresses).toContainEqual({ type: 'InternalIP', address: '10.244.80.1' })
	})

	it('writes lease renew times as microseconds', () => {
		const now = new Date('2026-11-29T10:00:00.123Z')
		expect(microTime(now)).toBe('2026-11-29T10:00:00.123000Z')
		expect(leaseObject('n1', now)).toMatchObject({
			metadata: { name: 'n1', namespace: 'kube-node-lease' },
			spec: { holderIdentity: 'n1', renewTime: '2026-11-29T10:00:00.123000Z' },
		})
	})

	it.each<[object[] | undefined, object[] | undefined]>([
		[undefined, undefined],
		[[], undefined],
		[[{ key: 'dedicated', effect: 'NoSchedule' }], undefined],
		[[{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }], []],
		[
			[
				{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
				{ key: 'dedicated', effect: 'NoSchedule' },
			],
			[{ key: 'dedicated', effect: 'NoSchedule' }],
		],
	])('lifts only the lifecycle taints from %j', (taints, expected) => {
		expect(withoutLifecycleTaints(taints as { key: string }[] | undefined)).toEqual(expected)
	})
})
