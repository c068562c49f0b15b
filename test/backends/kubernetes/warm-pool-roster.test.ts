// The warm-pool roster's own discipline against a scripted API: which pods it lists and probes,
// what it remembers (a pass by pod uid, never a refusal), its bound on probes at once, and that a
// closed roster leaves nothing running. The acquire's use of it runs against the real controller
// in warm-pool-roster.cluster.test.ts.
import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	type RosterPod,
	WarmPoolRoster,
} from '../../../src/backends/kubernetes/warm-pool-roster.js'
import { waitFor } from '../../cluster/wait-for.js'
import { scriptedApi } from './scripted-api-port.js'

const SELECTOR = 'agents.x-k8s.io/warm-pool-sandbox=0badcafe'

function poolPod(
	name: string,
	uid: string,
	ready = true,
	ip = `10.0.0.${name.length}`,
): KubernetesObject {
	return {
		metadata: { name, uid },
		status: {
			phase: 'Running',
			podIP: ip,
			conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
		},
	}
}

function rosterOver(
	pods: () => KubernetesObject[],
	warm: (pod: RosterPod, signal: AbortSignal) => Promise<void>,
) {
	const api = scriptedApi((call) => {
		if (call.verb === 'GET') return { metadata: { name: 'pool' }, status: { selector: SELECTOR } }
		return { items: pods() }
	})
	const roster = new WarmPoolRoster({ api: api.port, namespace: 'ns', poolName: 'pool', warm })
	return { api, roster }
}

describe('the warm-pool roster', () => {
	it('reads the pool selector once, lists its pods by it, and probes each ready pod once; a pass is remembered by uid, a refusal is not', async () => {
		const probed: string[] = []
		const { api, roster } = rosterOver(
			() => [poolPod('a', 'uid-a'), poolPod('b', 'uid-b'), poolPod('c', 'uid-c', false)],
			async (pod) => {
				probed.push(pod.uid)
				if (pod.uid === 'uid-b') throw new Error('privileged')
			},
		)
		roster.refresh()
		await waitFor('both ready pods probed', async () => (probed.length === 2 ? true : undefined))
		await roster.close()
		expect(probed.sort()).toEqual(['uid-a', 'uid-b'])
		expect(roster.passed('uid-a')).toBe(true)
		expect(roster.passed('uid-b')).toBe(false)
		// A pod that is not Ready is neither listed for the acquire nor probed.
		expect(roster.lookup('c')).toBeUndefined()
		expect(roster.lookup('a')).toEqual({ name: 'a', uid: 'uid-a', ip: '10.0.0.1' })
		expect(api.log()).toEqual([
			'GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxwarmpools/pool',
			'LIST /api/v1/namespaces/ns/pods',
		])
		expect(api.calls[1]?.query?.labelSelector).toBe(SELECTOR)
	})

	it('forgets a pod the next LIST no longer shows, and a replaced pod under the same name is a new uid, not proven', async () => {
		let pods = [poolPod('a', 'uid-a')]
		const probed: string[] = []
		const { api, roster } = rosterOver(
			() => pods,
			async (pod) => {
				probed.push(pod.uid)
			},
		)
		roster.refresh()
		await waitFor('first pass', async () => (roster.passed('uid-a') ? true : undefined))
		pods = [poolPod('a', 'uid-a2')]
		roster.refresh()
		await waitFor('second LIST', async () =>
			api.log().filter((line) => line.startsWith('LIST')).length === 2 ? true : undefined,
		)
		await waitFor('replacement probed', async () => (roster.passed('uid-a2') ? true : undefined))
		expect(roster.passed('uid-a')).toBe(false)
		expect(roster.lookup('a')?.uid).toBe('uid-a2')
		expect(probed).toEqual(['uid-a', 'uid-a2'])
		// The selector was read once.
		expect(api.log().filter((line) => line.startsWith('GET'))).toHaveLength(1)
		await roster.close()
	})

	it('hands out the probe under way in a pod by uid: it resolves true when the pod passed, false when it did not, and is gone once settled', async () => {
		const outcomes = new Map<string, { pass: () => void; fail: () => void }>()
		const { roster } = rosterOver(
			() => [poolPod('a', 'uid-a'), poolPod('b', 'uid-b', true, '10.0.0.2')],
			(pod) =>
				new Promise<void>((resolve, reject) => {
					outcomes.set(pod.uid, { pass: resolve, fail: () => reject(new Error('privileged')) })
				}),
		)
		expect(roster.warming('uid-a')).toBeUndefined()
		roster.refresh()
		await waitFor('both probes under way', async () => (outcomes.size === 2 ? true : undefined))
		const a = roster.warming('uid-a')
		const b = roster.warming('uid-b')
		expect(a).toBeDefined()
		expect(roster.passed('uid-a')).toBe(false)
		outcomes.get('uid-a')?.pass()
		outcomes.get('uid-b')?.fail()
		expect(await a).toBe(true)
		expect(await b).toBe(false)
		expect(roster.passed('uid-a')).toBe(true)
		expect(roster.passed('uid-b')).toBe(false)
		expect(roster.warming('uid-a')).toBeUndefined()
		expect(roster.warming('uid-b')).toBeUndefined()
		await roster.close()
	})

	it('runs at most four probes at once, and close() aborts and awaits the ones under way', async () => {
		const names = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6']
		const started: string[] = []
		let settled = 0
		const { roster } = rosterOver(
			() => names.map((name, index) => poolPod(name, `uid-${name}`, true, `10.0.1.${index}`)),
			(pod, signal) =>
				new Promise<void>((_, reject) => {
					started.push(pod.uid)
					signal.addEventListener('abort', () => {
						settled += 1
						reject(signal.reason)
					})
				}),
		)
		roster.refresh()
		await waitFor('four probes under way', async () => (started.length === 4 ? true : undefined))
		// A refresh while those run starts no more than the bound allows.
		roster.refresh()
		await roster.close()
		expect(started).toHaveLength(4)
		expect(settled).toBe(4)
		expect(names.some((name) => roster.passed(`uid-${name}`))).toBe(false)
	})

	it('a failing LIST or a pool without a selector is silent: nothing is listed or probed', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'GET') return { metadata: { name: 'pool' }, status: {} }
			throw new Error('not reached')
		})
		const probed: string[] = []
		const roster = new WarmPoolRoster({
			api: api.port,
			namespace: 'ns',
			poolName: 'pool',
			warm: async (pod) => {
				probed.push(pod.uid)
			},
		})
		roster.refresh()
		await roster.close()
		expect(api.log()).toEqual([
			'GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxwarmpools/pool',
		])
		expect(probed).toEqual([])
	})
})
