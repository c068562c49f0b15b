import { describe, expect, it } from 'vitest'
import type { KubernetesGuestRef } from '../../../../src/backends/kubernetes/workspace/guest-identity.js'
import {
	type GuestObservationSource,
	GuestRestartWatch,
	guestRestartEvent,
	type KubernetesGuestRestartEvent,
} from '../../../../src/backends/kubernetes/workspace/guest-restart-events.js'

const podA = { podUid: 'pod-a' }
const podABoot1 = { podUid: 'pod-a', guestBootId: 'boot-1' }
const podABoot2 = { podUid: 'pod-a', guestBootId: 'boot-2' }
const podB = { podUid: 'pod-b' }
const podBBoot3 = { podUid: 'pod-b', guestBootId: 'boot-3' }

describe('guestRestartEvent', () => {
	const table: Array<
		[
			string,
			KubernetesGuestRef | undefined,
			KubernetesGuestRef,
			GuestObservationSource,
			KubernetesGuestRestartEvent['reason'] | undefined,
		]
	> = [
		['the first binding', undefined, podABoot1, 'guest', undefined],
		['R15-1d46ef4-08: another pod uid', podABoot1, podBBoot3, 'guest', 'pod-replaced'],
		['another pod uid, no boot ids at all', podA, podB, 'guest', 'pod-replaced'],
		[
			'R15-1d46ef4-09: another boot id in the same pod',
			podABoot1,
			podABoot2,
			'guest',
			'container-restarted',
		],
		['the same boot id', podABoot1, podABoot1, 'guest', undefined],
		[
			'R15-1d46ef4-22: a boot id learned for the first time (older guest before)',
			podA,
			podABoot1,
			'guest',
			undefined,
		],
		['R15-1d46ef4-22: a guest that stamps none', podA, podA, 'guest', undefined],
		[
			'R15-1d46ef4-10: the handle’s own resume onto a new pod',
			podABoot1,
			podBBoot3,
			'own-resume',
			undefined,
		],
	]
	it.each(table)('%s', (_title, previous, current, source, reason) => {
		const event = guestRestartEvent(previous, current, source)
		if (reason === undefined) expect(event).toBeUndefined()
		else expect(event).toEqual({ reason, previous, current })
	})
})

describe('GuestRestartWatch', () => {
	it('R15-1d46ef4-08: a listener hears pod-replaced and container-restarted, and its unsubscribe ends that', () => {
		const watch = new GuestRestartWatch()
		const heard: KubernetesGuestRestartEvent[] = []
		const unsubscribe = watch.subscribe((event) => heard.push(event))
		watch.observe(podABoot1, 'own-resume')
		watch.observe(podABoot2, 'guest')
		watch.observe(podB, 'guest')
		unsubscribe()
		watch.observe(podBBoot3, 'guest')
		watch.observe({ podUid: 'pod-c' }, 'guest')
		expect(heard).toEqual([
			{ reason: 'container-restarted', previous: podABoot1, current: podABoot2 },
			{ reason: 'pod-replaced', previous: podABoot2, current: podB },
		])
		expect(watch.current).toEqual({ podUid: 'pod-c' })
	})

	it('R15-1d46ef4-10/11: silent across its own resume, but a pod replaced after that resume names the pod the resume bound', () => {
		const watch = new GuestRestartWatch()
		const heard: KubernetesGuestRestartEvent[] = []
		watch.subscribe((event) => heard.push(event))
		watch.observe(podABoot1, 'own-resume')
		watch.observe(podB, 'own-resume')
		expect(heard).toEqual([])
		watch.observe({ podUid: 'pod-c' }, 'guest')
		expect(heard).toEqual([
			{ reason: 'pod-replaced', previous: podB, current: { podUid: 'pod-c' } },
		])
	})

	it('keeps the boot id it knows when an observation of the same pod carries none', () => {
		const watch = new GuestRestartWatch()
		const heard: KubernetesGuestRestartEvent[] = []
		watch.subscribe((event) => heard.push(event))
		watch.observe(podABoot1, 'own-resume')
		watch.observe(podA, 'guest')
		expect(watch.current).toEqual(podABoot1)
		watch.observe(podABoot2, 'guest')
		expect(heard.map((event) => event.reason)).toEqual(['container-restarted'])
	})

	it('a listener that throws does not keep the others from hearing the event', () => {
		const watch = new GuestRestartWatch()
		const heard: string[] = []
		watch.subscribe(() => {
			throw new Error('listener failure')
		})
		watch.subscribe((event) => heard.push(event.reason))
		watch.observe(podA, 'own-resume')
		watch.observe(podB, 'guest')
		expect(heard).toEqual(['pod-replaced'])
	})
})
