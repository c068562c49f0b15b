// The fleet verbs' requests against a scripted API port: release by selector, capacity by three
// reads, and their refusals before any request.
import { describe, expect, it } from 'vitest'
import {
	readKubernetesTaskCapacity,
	releaseKubernetesTaskSandboxes,
	SandboxArgumentError,
	SandboxConfigError,
} from '../../../src/index.js'
import { base, claims } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import { scriptedApi } from './scripted-api-port.js'

describe('fleet verbs', () => {
	it.each([[undefined], [''], ['   ']])(
		'releaseKubernetesTaskSandboxes refuses labelSelector %j before any request',
		async (labelSelector) => {
			const api = scriptedApi(() => ({ items: [] }))
			const error = await rejectionError(
				releaseKubernetesTaskSandboxes(base, { labelSelector } as never, { api: api.port }),
			)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(api.calls).toEqual([])
		},
	)

	it.each([
		[
			'releaseKubernetesTaskSandboxes',
			(api: ReturnType<typeof scriptedApi>) =>
				releaseKubernetesTaskSandboxes(base, { labelSelector: 'a=b', signal: 'stop' } as never, {
					api: api.port,
				}),
		],
		[
			'readKubernetesTaskCapacity',
			(api: ReturnType<typeof scriptedApi>) =>
				readKubernetesTaskCapacity({ ...base, warmPoolName: 'pool' }, { signal: 'stop' } as never, {
					api: api.port,
				}),
		],
	])('%s refuses a signal that is not an AbortSignal before any request', async (method, call) => {
		const api = scriptedApi(() => ({ items: [] }))
		const error = await rejectionError(call(api))
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect(error).toMatchObject({ method, parameter: 'options.signal', received: '"stop"' })
		expect(api.calls).toEqual([])
	})

	it('releaseKubernetesTaskSandboxes lists claims by selector and deletes each', async () => {
		const api = scriptedApi((call) =>
			call.verb === 'LIST'
				? { items: [{ metadata: { name: 'a' } }, { metadata: { name: 'b' } }] }
				: {},
		)
		const released = await releaseKubernetesTaskSandboxes(
			base,
			{ labelSelector: 'host.example.com/instance=web-7' },
			{ api: api.port },
		)
		expect(released).toEqual({ deleted: 2, names: ['a', 'b'] })
		expect(api.calls[0]?.query?.labelSelector).toBe('host.example.com/instance=web-7')
		expect(api.log()).toEqual([`LIST ${claims}`, `DELETE ${claims}/a`, `DELETE ${claims}/b`])
	})

	it('readKubernetesTaskCapacity issues three reads and no write', async () => {
		const api = scriptedApi((call) => {
			if (call.path.includes('sandboxwarmpools')) {
				return { metadata: { name: 'pool' }, spec: { replicas: 4 }, status: { readyReplicas: 3 } }
			}
			if (call.path.includes('sandboxclaims')) {
				return {
					items: [
						{ metadata: { name: 'a' }, spec: { warmPoolRef: { name: 'pool' } } },
						{ metadata: { name: 'b' }, spec: { warmPoolRef: { name: 'other' } } },
					],
				}
			}
			return { items: [{ metadata: { name: 'p' }, status: { phase: 'Pending' } }] }
		})
		const capacity = await readKubernetesTaskCapacity(base, {}, { api: api.port })
		expect(capacity).toEqual({
			warmPool: { ready: 3, desired: 4 },
			activeClaims: 1,
			pendingPods: 1,
		})
		expect(api.calls.map((call) => call.verb)).toEqual(['GET', 'LIST', 'LIST'])
	})

	it('readKubernetesTaskCapacity refuses a config without warmPoolName', async () => {
		const api = scriptedApi(() => ({}))
		const error = await rejectionError(
			readKubernetesTaskCapacity({ ...base, warmPoolName: undefined }, {}, { api: api.port }),
		)
		expect(error).toMatchObject({ field: 'warmPoolName' })
		expect(api.calls).toEqual([])
	})

	it('both verbs honour an aborted signal', async () => {
		const api = scriptedApi(() => ({ items: [] }))
		const signal = AbortSignal.abort(new Error('stop'))
		await expect(
			releaseKubernetesTaskSandboxes(base, { labelSelector: 'a=b', signal }, { api: api.port }),
		).rejects.toThrow('stop')
		await expect(readKubernetesTaskCapacity(base, { signal }, { api: api.port })).rejects.toThrow(
			'stop',
		)
	})
})
