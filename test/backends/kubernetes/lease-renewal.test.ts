// The lease loop's requests against a scripted API port: backoff after failed renewals, the half
// TTL after a success, and a 404 ending it.
import { describe, expect, it } from 'vitest'
import { KubernetesLeaseRenewal } from '../../../src/backends/kubernetes/lease-renewal.js'
import { claims } from './acquire-config.js'
import { scriptedApi, statusError } from './scripted-api-port.js'

describe('the lease', () => {
	const claimPath = `${claims}/c1`

	it('reports two failed renewals, backs off 1 s then 2 s, and returns to the half TTL on success', async () => {
		let patches = 0
		const reported: Error[] = []
		const api = scriptedApi(() => {
			patches++
			if (patches <= 2) throw statusError('PATCH', claimPath, 503)
			return {}
		})
		const lease = new KubernetesLeaseRenewal({
			api: api.port,
			path: claimPath,
			kind: 'claim',
			ttlSeconds: 3600,
			onError: (error) => reported.push(error),
			onGone: () => {},
			random: () => 0.5,
		})
		try {
			expect(await lease.tick()).toBe(1000)
			expect(await lease.tick()).toBe(2000)
			expect(await lease.tick()).toBe(1_800_000)
		} finally {
			lease.stop()
		}
		expect(reported).toHaveLength(2)
		expect(api.calls[2]?.body).toEqual({
			spec: { lifecycle: { shutdownTime: expect.stringMatching(/Z$/) } },
		})
	})

	it('stops and marks gone on a 404, and sends nothing after stop()', async () => {
		const gone: Error[] = []
		const api = scriptedApi(() => {
			throw statusError('PATCH', claimPath, 404)
		})
		const lease = new KubernetesLeaseRenewal({
			api: api.port,
			path: claimPath,
			kind: 'sandbox',
			ttlSeconds: 3600,
			onGone: (error) => gone.push(error),
		})
		expect(await lease.tick()).toBeUndefined()
		expect(lease.gone).toBe(true)
		expect(gone).toHaveLength(1)
		expect(await lease.tick()).toBeUndefined()
		expect(api.calls).toHaveLength(1)
	})
})
