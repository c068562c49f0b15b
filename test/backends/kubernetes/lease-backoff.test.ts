// The lease's schedule as the loop really runs it (KubernetesLeaseRenewal on fake timers and a
// fake clock, PATCHes answered by a scripted API port): a success schedules the next renewal a
// jittered half TTL later; a failure retries 1 s later, doubling per consecutive failure, capped
// at min(30 s, TTL/20); a success returns to the half TTL; 404/410 stops the loop at once; each
// failure (and no success) is reported; and a short outage around a scheduled renewal gets
// several attempts before the object's shutdownTime. The options and defaults are unchanged.
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest'
import type { KubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	KubernetesLeaseRenewal,
	type LeaseRenewalOptions,
} from '../../../src/backends/kubernetes/lease-renewal.js'
import { scriptedApi, statusError } from './scripted-api-port.js'

const PATH = '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxclaims/c1'
const SECOND = 1000

interface Attempt {
	readonly atMs: number
	readonly ok: boolean
	readonly shutdownTimeMs: number
}

const leases: KubernetesLeaseRenewal[] = []

afterEach(() => {
	for (const lease of leases.splice(0)) lease.stop()
	vi.useRealTimers()
})

/**
 * A lease on fake time starting at 0, whose PATCH at time t fails while `failing(t)` is true
 * (503, or `goneStatus` when set). Records every attempt with the shutdownTime it asked for.
 */
function leaseOnFakeTime(options: {
	ttlSeconds: number
	random?: () => number
	failing?: (atMs: number) => boolean
	goneStatus?: 404 | 410
}) {
	vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: 0 })
	const attempts: Attempt[] = []
	const reported: Error[] = []
	const gone: Error[] = []
	const api = scriptedApi((call) => {
		const atMs = Date.now()
		const body = call.body as { spec: { lifecycle: { shutdownTime: string } } }
		const shutdownTimeMs = Date.parse(body.spec.lifecycle.shutdownTime)
		if (options.goneStatus !== undefined) {
			attempts.push({ atMs, ok: false, shutdownTimeMs })
			throw statusError('PATCH', PATH, options.goneStatus)
		}
		const ok = !(options.failing?.(atMs) ?? false)
		attempts.push({ atMs, ok, shutdownTimeMs })
		if (!ok) throw statusError('PATCH', PATH, 503)
		return {}
	})
	const lease = new KubernetesLeaseRenewal({
		api: api.port,
		path: PATH,
		kind: 'claim',
		ttlSeconds: options.ttlSeconds,
		onError: (error) => reported.push(error),
		onGone: (error) => gone.push(error),
		random: options.random ?? (() => 0.5),
	})
	leases.push(lease)
	return { lease, attempts, reported, gone, api }
}

const gaps = (attempts: readonly Attempt[]): number[] =>
	attempts.slice(1).map((attempt, index) => attempt.atMs - (attempts[index]?.atMs ?? 0))

describe('after a success', () => {
	it.each([
		[0, 1_620_000],
		[0.5, 1_800_000],
		[0.999_999, 1_980_000],
	])(
		'tick() schedules the next attempt a jittered half TTL later (random %s → %i ms)',
		async (random, expected) => {
			const { lease, attempts } = leaseOnFakeTime({ ttlSeconds: 3600, random: () => random })
			expect(await lease.tick()).toBe(expected)
			await vi.advanceTimersByTimeAsync(expected - 1)
			expect(attempts).toHaveLength(1)
			await vi.advanceTimersByTimeAsync(1)
			expect(attempts).toHaveLength(2)
			expect(attempts.every((attempt) => attempt.ok)).toBe(true)
		},
	)
})

describe('after a failure', () => {
	it.each([
		[3600, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]],
		[200, [1000, 2000, 4000, 8000, 10_000, 10_000, 10_000, 10_000]],
	])(
		'consecutive failed renewals of a %i s TTL retry after %j: 1 s, doubling, then the cap',
		async (ttlSeconds, expected) => {
			const { lease, attempts, reported } = leaseOnFakeTime({
				ttlSeconds,
				failing: () => true,
			})
			lease.start()
			const halfTtlMs = (ttlSeconds * SECOND) / 2
			await vi.advanceTimersByTimeAsync(halfTtlMs)
			expect(attempts.map((attempt) => attempt.atMs)).toEqual([halfTtlMs])
			await vi.advanceTimersByTimeAsync(expected.reduce((sum, gap) => sum + gap, 0))
			expect(gaps(attempts)).toEqual(expected)
			expect(reported).toHaveLength(attempts.length)
		},
	)

	it.each([
		[3600, 30_000],
		[600, 30_000],
		[200, 10_000],
		[20, 1000],
	])(
		'caps the failure backoff of a %i s TTL at %i ms, the smaller of 30 s and TTL/20',
		async (ttlSeconds, cap) => {
			const { lease } = leaseOnFakeTime({ ttlSeconds, failing: () => true })
			const delays: Array<number | undefined> = []
			for (let failure = 0; failure < 12; failure++) delays.push(await lease.tick())
			expect(Math.max(...delays.map((delay) => delay ?? Number.NaN))).toBe(cap)
			expect(delays.slice(-3)).toEqual([cap, cap, cap])
			expect(delays[0]).toBe(Math.min(1000, cap))
		},
	)

	it('reports each failed renewal to onLeaseRenewalError and nothing for a success', async () => {
		const outcomes = [false, true, false, false, true, true]
		let call = 0
		const thrown: Error[] = []
		const reported: Error[] = []
		const api = scriptedApi(() => {
			const ok = outcomes[call++]
			if (ok) return {}
			const error = statusError('PATCH', PATH, 503)
			thrown.push(error)
			throw error
		})
		const lease = new KubernetesLeaseRenewal({
			api: api.port,
			path: PATH,
			kind: 'claim',
			ttlSeconds: 3600,
			onError: (error) => reported.push(error),
			onGone: () => {},
		})
		leases.push(lease)
		for (const _ of outcomes) await lease.tick()
		expect(thrown).toHaveLength(3)
		expect(reported).toEqual(thrown)
	})

	it('a success after failures returns the schedule to the jittered half TTL', async () => {
		const { lease, attempts } = leaseOnFakeTime({
			ttlSeconds: 3600,
			random: () => 0.25,
			// The first two attempts (at the half TTL, then 1 s later) fail.
			failing: (atMs) => atMs < 1_710_000 + 2 * SECOND,
		})
		lease.start()
		await vi.advanceTimersByTimeAsync(1_710_000 + 1000 + 2000 + 1_710_000)
		expect(attempts.map((attempt) => attempt.ok)).toEqual([false, false, true, true])
		expect(gaps(attempts)).toEqual([1000, 2000, 1_710_000])
	})
})

describe('an object that is gone', () => {
	it.each([404, 410] as const)(
		'a renewal answered %i stops the loop at once and reports the object gone',
		async (status) => {
			const { lease, attempts, reported, gone } = leaseOnFakeTime({
				ttlSeconds: 3600,
				goneStatus: status,
			})
			lease.start()
			await vi.advanceTimersByTimeAsync(1_800_000)
			expect(attempts).toHaveLength(1)
			expect(gone).toHaveLength(1)
			expect(gone[0]).toMatchObject({ status })
			expect(reported).toEqual([])
			expect(lease.gone).toBe(true)
			expect(lease.stopped).toBe(true)
			await vi.advanceTimersByTimeAsync(10 * 3_600_000)
			expect(attempts).toHaveLength(1)
			expect(await lease.tick()).toBeUndefined()
			expect(attempts).toHaveLength(1)
		},
	)
})

describe('a short outage around a scheduled renewal', () => {
	it.each([
		[200, 60],
		[3600, 600],
	])(
		'a %i s TTL renewed late in its jitter window survives a %i s outage: several attempts, then a renewal before shutdownTime',
		async (ttlSeconds, outageSeconds) => {
			// The latest jittered renewal (1.1 × TTL/2 after the last success, at 0); the object's
			// shutdownTime is one TTL after that success. The outage starts at the renewal.
			const renewalAtMs = Math.round(((ttlSeconds * SECOND) / 2) * 1.1)
			const shutdownTimeMs = ttlSeconds * SECOND
			const { lease, attempts } = leaseOnFakeTime({
				ttlSeconds,
				random: () => 0.999_999,
				failing: (atMs) => atMs < renewalAtMs + outageSeconds * SECOND,
			})
			lease.start()
			await vi.advanceTimersByTimeAsync(shutdownTimeMs)
			const renewed = attempts.find((attempt) => attempt.ok)
			expect(renewed).toBeDefined()
			expect(renewed?.atMs).toBeLessThan(shutdownTimeMs)
			expect(renewed?.shutdownTimeMs).toBeGreaterThanOrEqual(
				(renewed?.atMs ?? 0) + shutdownTimeMs - SECOND,
			)
			const failedBeforeShutdown = attempts.filter(
				(attempt) => !attempt.ok && attempt.atMs < shutdownTimeMs,
			)
			expect(failedBeforeShutdown.length).toBeGreaterThanOrEqual(5)
		},
	)
})

describe('the lease options', () => {
	it('LeaseRenewalOptions gains no backoff field and the lease settings a caller configures keep their defaults', () => {
		expectTypeOf<keyof LeaseRenewalOptions>().toEqualTypeOf<
			'api' | 'path' | 'kind' | 'ttlSeconds' | 'onError' | 'onGone' | 'now' | 'random'
		>()
		type LeaseFields = Extract<
			keyof KubernetesBackendConfig,
			`${string}${'Lease' | 'lease' | 'Ttl' | 'Backoff' | 'backoff' | 'Retry' | 'retry'}${string}`
		>
		expectTypeOf<LeaseFields>().toEqualTypeOf<'onLeaseRenewalError' | 'claimTtlSeconds'>()
		const resolved = resolveKubernetesBackendConfig({
			tier: 'microvm',
			service: 'kubernetes',
			namespace: 'ns',
			access: { server: 'https://127.0.0.1:6443', getToken: () => 't' },
			sandboxTemplateName: 'task',
		})
		expect(resolved.claimTtlSeconds).toBe(3600)
		expect(resolved.onLeaseRenewalError).toBeUndefined()
	})
})
