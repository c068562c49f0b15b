// Readiness against a scripted API port: the acquire resolves only on a Ready read, inside one
// budget, and every failure on the create path deletes what it created.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import type { KubernetesBackendConfig } from '../../../src/index.js'
import { claims, config } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import {
	type Handler,
	pendingClaim,
	pod,
	readyClaim,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

describe('readiness and the create-path cleanup', () => {
	it('resolves only once the claim reads Ready, and stops reading it at readyTimeoutMs', async () => {
		let reads = 0
		const late = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) {
				reads++
				return reads < 4 ? pendingClaim() : readyClaim('pool-late')
			}
			return pod('u', '10.0.0.1')
		})
		expect(await acquireTaskSandbox({ api: late.port, config: config() })).toMatchObject({
			id: 'pool-late',
		})
		// Four claim reads, the pod read only after the one that said Ready.
		expect(late.log().map((line) => line.split(' ')[0])).toEqual([
			'POST',
			'GET',
			'GET',
			'GET',
			'GET',
			'GET',
		])
		expect(late.log().at(-1)).toContain('/pods/pool-late')

		// On a clock that advances 100 ms per read, a 1000 ms budget allows reads at 0 … 900 only.
		let clock = 0
		const readAt: number[] = []
		const never = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) return pod('u')
			readAt.push(clock)
			clock += 100
			return pendingClaim()
		})
		const error = await rejectionError(
			acquireTaskSandbox({
				api: never.port,
				config: config({ readyTimeoutMs: 1000 }),
				now: () => clock,
			}),
		)
		expect(error).toMatchObject({ name: 'KubernetesAcquireError', reason: 'not-ready' })
		expect((error as Error).cause).toMatchObject({ timeoutMs: 1000 })
		expect(readAt).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900])
	})

	const failures: Array<[string, Partial<KubernetesBackendConfig>, Handler]> = [
		['the readiness budget runs out', { readyTimeoutMs: 100 }, () => pendingClaim()],
		[
			'the bound pod has no uid',
			{},
			(call) =>
				call.path.includes('/pods/')
					? { metadata: { name: 'pool-a' }, status: { podIP: '10.0.0.1' } }
					: readyClaim('pool-a'),
		],
		[
			'the pod IP never arrives in pod-ip mode',
			{ agentAddress: 'pod-ip', readyTimeoutMs: 150 },
			(call) => (call.path.includes('/pods/') ? pod('uid-a') : readyClaim('pool-a')),
		],
		[
			'the pod read is forbidden',
			{},
			(call) => {
				if (call.path.includes('/pods/')) throw statusError('GET', call.path, 403)
				return readyClaim('pool-a')
			},
		],
	]

	it.each(failures)(
		'deletes the claim before rejecting when %s',
		async (_case, overrides, read) => {
			const api = scriptedApi((call) => {
				if (call.verb === 'POST') return call.body
				if (call.verb === 'DELETE') return {}
				return read(call)
			})
			await rejectionError(acquireTaskSandbox({ api: api.port, config: config(overrides) }))
			const claimName = (api.calls[0]?.body as KubernetesObject | undefined)?.metadata.name ?? ''
			expect(api.log().filter((line) => line.startsWith('DELETE'))).toEqual([
				`DELETE ${claims}/${claimName}`,
			])
			expect(api.log().at(-1)).toBe(`DELETE ${claims}/${claimName}`)
		},
	)
})
