// What an acquire POSTs, against a scripted API port: the claim or (without a warm pool) the direct
// Sandbox from the template, with its shutdown time and policy.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import type { KubernetesBackendConfig } from '../../../src/index.js'
import { config, ns } from './acquire-config.js'
import { pod, readyClaim, scriptedApi } from './scripted-api-port.js'

describe('what every acquire creates', () => {
	const wallClock = () => Date.parse('2030-01-01T12:00:00.400Z')
	const template = {
		metadata: { name: 'task' },
		spec: { podTemplate: { spec: { containers: [{ name: 'agent' }] } } },
	}
	const answer = (call: { verb: string; path: string; body?: unknown }) => {
		if (call.path.endsWith('/sandboxtemplates/task')) return template
		if (call.verb === 'POST') return call.body
		if (call.path.includes('/pods/')) return pod('uid-t', '10.0.0.2')
		if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-t')
		return { metadata: { name: 's' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } }
	}
	const postedBody = async (overrides: Partial<KubernetesBackendConfig>) => {
		const api = scriptedApi(answer)
		await acquireTaskSandbox({ api: api.port, config: config(overrides), wallClock })
		const post = api.calls.find((call) => call.verb === 'POST')
		return post?.body as KubernetesObject
	}

	it('stamps the claim and the direct Sandbox with shutdownTime now + claimTtlSeconds, shutdownPolicy Delete, and no ttlSecondsAfterFinished', async () => {
		const claim = await postedBody({ claimTtlSeconds: 120 })
		expect(claim.kind).toBe('SandboxClaim')
		expect(claim.spec?.lifecycle).toEqual({
			shutdownTime: '2030-01-01T12:02:00Z',
			shutdownPolicy: 'Delete',
		})
		const sandbox = await postedBody({ claimTtlSeconds: 120, warmPoolName: undefined })
		expect(sandbox.kind).toBe('Sandbox')
		expect(sandbox.spec).toMatchObject({
			shutdownTime: '2030-01-01T12:02:00Z',
			shutdownPolicy: 'Delete',
		})
		for (const body of [claim, sandbox]) {
			expect(JSON.stringify(body)).not.toContain('ttlSecondsAfterFinished')
		}
	})

	it('expires a created object one hour after creation when claimTtlSeconds is not set', async () => {
		const claim = await postedBody({})
		expect(claim.spec?.lifecycle).toMatchObject({ shutdownTime: '2030-01-01T13:00:00Z' })
		const sandbox = await postedBody({ warmPoolName: undefined })
		expect(sandbox.spec).toMatchObject({ shutdownTime: '2030-01-01T13:00:00Z' })
	})
})

describe('acquire without a warm pool', () => {
	it('reads the template and POSTs a Sandbox (no claim), polling the Sandbox itself', async () => {
		const agent = { name: 'agent', image: 'namzu.example/agent:1' }
		const api = scriptedApi((call) => {
			if (call.path.endsWith('/sandboxtemplates/task')) {
				return {
					metadata: { name: 'task' },
					spec: { podTemplate: { spec: { containers: [agent] } }, volumeClaimTemplates: [] },
				}
			}
			if (call.verb === 'POST') return call.body
			if (call.path.includes(`/namespaces/${ns}/sandboxes/`)) {
				return {
					metadata: { name: call.path.split('/').at(-1) },
					status: { conditions: [{ type: 'Ready', status: 'True' }] },
				}
			}
			return pod('uid-d', '10.0.0.3')
		})
		const acquired = await acquireTaskSandbox({
			api: api.port,
			config: config({ warmPoolName: undefined }),
		})
		const log = api.log()
		expect(log[0]).toBe(
			`GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxtemplates/task`,
		)
		expect(log[1]).toBe(`POST /apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`)
		expect(log.some((line) => line.includes('sandboxclaims'))).toBe(false)
		expect(acquired.created.kind).toBe('sandbox')
		expect(acquired.id).toMatch(/^namzu-task-/)
		const body = api.calls[1]?.body as { spec: Record<string, unknown> }
		expect(body.spec).toMatchObject({
			shutdownPolicy: 'Delete',
			volumeClaimTemplates: [],
			podTemplate: { spec: { containers: [agent] } },
		})
	})
})
