// The per-sandbox pod label on the acquire, against a scripted API port: written in the claim's
// additionalPodMetadata (beside the profile) or on a direct Sandbox's pod template, valued with the
// created object's name, confirmed on the bound pod on the readiness budget (a pod without it is
// refused and the claim released), and the created object's uid kept for the policy's owner.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import { KubernetesPodLabelNotObservedError } from '../../../src/index.js'
import { config } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import { pod, readyClaim, scriptedApi } from './scripted-api-port.js'

const KEY = 'sandbox.namzu.ai/per-sandbox-egress'
const egress = { policy: { kind: 'deny-all' as const }, perSandbox: {} }
const template = {
	metadata: { name: 'task' },
	spec: { podTemplate: { metadata: { labels: { app: 'x' } }, spec: { containers: [] } } },
}

const nameOf = (body: unknown): string => (body as { metadata: { name: string } }).metadata.name

describe('the per-sandbox pod label', () => {
	it('R15-e2024bc-11: rides in the claim additionalPodMetadata with the profile, is confirmed on the pod, and the claim uid is kept', async () => {
		let claimName = ''
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') {
				claimName = nameOf(call.body)
				return { ...(call.body as object), metadata: { name: claimName, uid: 'claim-uid' } }
			}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return {
				...pod('uid-1', '10.0.0.7'),
				metadata: {
					name: 'pool-a',
					uid: 'uid-1',
					labels: { [KEY]: claimName, 'sandbox.namzu.ai/egress-profile': 'none' },
				},
			}
		})
		const acquired = await acquireTaskSandbox({
			api: api.port,
			config: config({ egress: { ...egress, profile: 'none' } }),
		})
		expect(api.calls[0]?.body).toMatchObject({
			spec: {
				additionalPodMetadata: {
					labels: { 'sandbox.namzu.ai/egress-profile': 'none', [KEY]: claimName },
				},
			},
		})
		expect(acquired.created).toEqual({
			kind: 'claim',
			path: expect.stringContaining(claimName),
			name: claimName,
			uid: 'claim-uid',
		})
	})

	it('R15-e2024bc-11: a bound pod without it is refused with KubernetesPodLabelNotObservedError and the claim released', async () => {
		let claimName = ''
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') {
				claimName = nameOf(call.body)
				return call.body
			}
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return pod('uid-1', '10.0.0.7')
		})
		const error = await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config({ egress }) }),
		)
		expect(error).toBeInstanceOf(KubernetesPodLabelNotObservedError)
		expect(error).toMatchObject({ labelKey: KEY, expected: claimName, observed: undefined })
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims\//)
	})

	it('rides on a direct Sandbox pod template valued with the Sandbox name', async () => {
		let sandboxName = ''
		const api = scriptedApi((call) => {
			if (call.verb === 'GET' && call.path.includes('/sandboxtemplates/')) return template
			if (call.verb === 'POST') {
				sandboxName = nameOf(call.body)
				return { ...(call.body as object), metadata: { name: sandboxName, uid: 'sb-uid' } }
			}
			if (!call.path.includes('/pods/')) {
				return {
					metadata: { name: sandboxName },
					status: { conditions: [{ type: 'Ready', status: 'True' }] },
				}
			}
			return {
				...pod('uid-1', '10.0.0.7'),
				metadata: { name: sandboxName, uid: 'uid-1', labels: { [KEY]: sandboxName } },
			}
		})
		const { warmPoolName: _pool, ...direct } = config({ egress })
		const acquired = await acquireTaskSandbox({ api: api.port, config: direct })
		const posted = api.calls.find((c) => c.verb === 'POST')?.body as
			| { spec: { podTemplate: { metadata: { labels: Record<string, string> } } } }
			| undefined
		const labels = posted?.spec.podTemplate.metadata.labels ?? {}
		expect(labels[KEY]).toBe(sandboxName)
		expect(acquired.created).toMatchObject({ kind: 'sandbox', name: sandboxName, uid: 'sb-uid' })
	})

	it('R15-e2024bc-01: without perSandbox the claim carries no per-sandbox label and the request sequence is unchanged', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return pod('uid-1', '10.0.0.7')
		})
		await acquireTaskSandbox({ api: api.port, config: config() })
		expect(JSON.stringify(api.calls[0]?.body)).not.toContain('per-sandbox')
		expect(api.log().map((line) => line.split(' ')[0])).toEqual(['POST', 'GET', 'GET'])
	})
})
