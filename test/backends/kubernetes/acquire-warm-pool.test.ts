// A warm-pool acquire's request discipline against a scripted API port: exactly the requests a
// clean acquire needs, the claim refused on the first read, retried reads inside one budget, the
// post-budget diagnosis before the cleanup, and the POST never retried.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import {
	KubernetesAcquireError,
	KubernetesApiTimeoutError,
	ReadinessPollTimeout,
} from '../../../src/index.js'
import { claims, config, ns } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import {
	connectError,
	pendingClaim,
	pod,
	readyClaim,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

describe('acquire from a warm pool', () => {
	it('issues exactly POST claim, GET claim, GET pod on a clean acquire and dials the service FQDN', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-ab12c')
			return pod('uid-1', '10.0.0.7')
		})
		const acquired = await acquireTaskSandbox({ api: api.port, config: config() })
		const claimName = (api.calls[0]?.body as { metadata?: { name?: string } } | undefined)?.metadata
			?.name
		expect(api.log()).toEqual([
			`POST ${claims}`,
			`GET ${claims}/${claimName}`,
			`GET /api/v1/namespaces/${ns}/pods/pool-ab12c`,
		])
		expect(acquired).toMatchObject({
			id: 'pool-ab12c',
			token: 'uid-1',
			host: `pool-ab12c.${ns}.svc.cluster.local`,
			created: { kind: 'claim', path: `${claims}/${claimName}` },
		})
		expect(api.calls[0]?.body).toMatchObject({
			kind: 'SandboxClaim',
			spec: { warmPoolRef: { name: 'pool' } },
		})
	})

	it('dials the pod IP in pod-ip mode, waiting for it on the readiness budget', async () => {
		let podReads = 0
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-x')
			podReads++
			return podReads < 3 ? pod('uid-2') : pod('uid-2', '10.0.0.9')
		})
		const acquired = await acquireTaskSandbox({
			api: api.port,
			config: config({ agentAddress: 'pod-ip' }),
		})
		expect(acquired).toMatchObject({ host: '10.0.0.9', token: 'uid-2' })
		expect(podReads).toBe(3)
	})

	it('writes claimLabels into the claim metadata and nothing into pod metadata', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-x')
			return pod('u', '10.0.0.1')
		})
		await acquireTaskSandbox({
			api: api.port,
			config: config({ claimLabels: { 'host.example.com/instance': 'web-7' } }),
		})
		const body = api.calls[0]?.body as { metadata: object; spec: object }
		expect(body.metadata).toMatchObject({ labels: { 'host.example.com/instance': 'web-7' } })
		expect(body.spec).not.toHaveProperty('additionalPodMetadata')
	})

	it('ends on the first read of a WarmPoolNotFound claim with claim-rejected and deletes the claim', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			return pendingClaim('WarmPoolNotFound', 'SandboxWarmPool "pool" not found')
		})
		const error = await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs: 60_000 }) }),
		)
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({
			reason: 'claim-rejected',
			retryable: false,
			controllerReason: 'WarmPoolNotFound',
			controllerMessage: 'SandboxWarmPool "pool" not found',
		})
		expect(api.log().map((line) => line.split(' ')[0])).toEqual(['POST', 'GET', 'DELETE'])
		expect(api.calls[2]?.path).toBe(api.calls[1]?.path)
	})

	it('retries connect errors, 429 and 503 inside the budget, honouring Retry-After', async () => {
		const failures = [
			connectError('GET', '/c'),
			statusError('GET', '/c', 429, 120),
			statusError('GET', '/c', 503),
		]
		const times: number[] = []
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) {
				times.push(performance.now())
				const failure = failures.shift()
				if (failure) throw failure
				return readyClaim('pool-r')
			}
			return pod('u', '10.0.0.1')
		})
		const acquired = await acquireTaskSandbox({
			api: api.port,
			config: config({ readyTimeoutMs: 5000 }),
		})
		expect(acquired.id).toBe('pool-r')
		expect(times).toHaveLength(4)
		// The read after the 429 waited at least its Retry-After (120 ms), not the 5 ms interval.
		expect((times[2] ?? 0) - (times[1] ?? 0)).toBeGreaterThanOrEqual(115)
	})

	it('rejects not-ready with a ReadinessPollTimeout cause after one pod GET and before the DELETE', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) return pod('u')
			return pendingClaim('DependenciesNotReady', 'Pod exists with phase: Pending')
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ name: 'KubernetesAcquireError', reason: 'not-ready' })
		expect((error as Error).cause).toBeInstanceOf(ReadinessPollTimeout)
		const verbs = api.log()
		expect(verbs.filter((line) => line.includes('/pods/'))).toHaveLength(1)
		expect(verbs.at(-2)).toMatch(/^GET .*\/pods\//)
		expect(verbs.at(-1)).toMatch(/^DELETE .*\/sandboxclaims\//)
	})

	it('lets the pod condition decide over a standing API failure: capacity', async () => {
		let reads = 0
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) {
				return pod('u', undefined, {
					phase: 'Pending',
					conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
				})
			}
			reads++
			if (reads > 2) throw statusError('GET', call.path, 503)
			return {
				metadata: { name: 'c' },
				status: {
					sandbox: { name: 'namzu-cold' },
					conditions: [{ type: 'Ready', status: 'False', reason: 'DependenciesNotReady' }],
				},
			}
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ reason: 'capacity', retryable: true })
		expect(api.log()).toContain(`GET /api/v1/namespaces/${ns}/pods/namzu-cold`)
	})

	it('forgets a recovered failure: a later plain timeout is not-ready, not api-unreachable', async () => {
		let reads = 0
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) throw statusError('GET', call.path, 404)
			reads++
			if (reads === 1) throw connectError('GET', call.path)
			return pendingClaim()
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ reason: 'not-ready' })
	})

	it('maps an API server that never recovers to api-unreachable', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			throw connectError('GET', call.path)
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ reason: 'api-unreachable', retryable: true })
	})

	it('ends at once on a 403 readiness read with forbidden, deleting the claim', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			throw statusError('GET', call.path, 403)
		})
		const error = await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs: 60_000 }) }),
		)
		expect(error).toMatchObject({ reason: 'forbidden', retryable: false })
		expect(api.log().map((line) => line.split(' ')[0])).toEqual(['POST', 'GET', 'DELETE'])
	})

	it('sends the POST once and rethrows a 400 as itself', async () => {
		const refused = statusError('POST', claims, 400)
		const api = scriptedApi(() => {
			throw refused
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toBe(refused)
		expect(api.log()).toEqual([`POST ${claims}`])
	})

	it('deletes by name after a POST that timed out (it may have committed), once', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') throw new KubernetesApiTimeoutError('POST', claims, 1000)
			return {}
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ reason: 'api-timeout' })
		expect(api.log().map((line) => line.split(' ')[0])).toEqual(['POST', 'DELETE'])
	})

	it('rethrows a claim Ready without a sandbox name as itself, after deleting the claim', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			return {
				metadata: { name: 'c' },
				status: { conditions: [{ type: 'Ready', status: 'True' }] },
			}
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).not.toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ name: 'KubernetesClaimUnboundError' })
		expect(api.log().at(-1)).toMatch(/^DELETE /)
	})
})
