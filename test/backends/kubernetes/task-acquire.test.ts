// The acquire's request discipline against a scripted API port: exactly the requests a clean
// acquire needs, the claim refused on the first read, retried reads inside one budget, the
// post-budget diagnosis before the cleanup, the POST never retried, and every failure deleting
// what it created. Also the lease loop and the fleet verbs' requests.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	createKubernetesSandboxProvider,
	refuseUnsupportedCreateOptions,
} from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesLeaseRenewal } from '../../../src/backends/kubernetes/lease-renewal.js'
import {
	KubernetesAcquireError,
	type KubernetesBackendConfig,
	KubernetesCreateOptionUnsupportedError,
	ReadinessPollTimeout,
	readKubernetesTaskCapacity,
	releaseKubernetesTaskSandboxes,
	SandboxConfigError,
	type SandboxCreateConfig,
} from '../../../src/index.js'
import { rejectionError } from './error-chain.js'
import {
	connectError,
	type Handler,
	pendingClaim,
	pod,
	readyClaim,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

const ns = 'sandboxes'
const claims = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`
const base: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: ns,
	access: { server: 'https://127.0.0.1:6443', getToken: () => 't' },
	sandboxTemplateName: 'task',
	warmPoolName: 'pool',
	readyPollIntervalMs: 5,
	readyTimeoutMs: 400,
}
const config = (overrides: Partial<KubernetesBackendConfig> = {}) =>
	resolveKubernetesBackendConfig({ ...base, ...overrides })

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
			if (call.verb === 'POST')
				throw new (class extends Error {
					override name = 'KubernetesApiTimeoutError'
				})('no answer')
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

describe('per-sandbox options', () => {
	it.each([
		['env', { env: { A: '1' } }],
		['memoryLimitMb', { memoryLimitMb: 256 }],
		['maxProcesses', { maxProcesses: 10 }],
		['egress', { egress: { kind: 'deny-all' } }],
	])('refuses %s by name', (option, createConfig) => {
		let caught: unknown
		try {
			refuseUnsupportedCreateOptions(createConfig as never)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(KubernetesCreateOptionUnsupportedError)
		expect((caught as KubernetesCreateOptionUnsupportedError).option).toBe(option)
		expect((caught as Error).message).toContain(option)
	})

	const refused: Array<[string, SandboxCreateConfig]> = [
		['env', { env: { A: '1' } }],
		['memoryLimitMb', { memoryLimitMb: 256 }],
		['maxProcesses', { maxProcesses: 10 }],
		['egress', { egress: { kind: 'deny-all' } }],
	]

	it.each(refused)(
		'refuses %s at create() by name, before any request is sent',
		async (option, createConfig) => {
			const api = scriptedApi(() => ({}))
			const provider = createKubernetesSandboxProvider(base, {}, { api: api.port })
			const error = await rejectionError(provider.create(createConfig))
			expect(error).toBeInstanceOf(KubernetesCreateOptionUnsupportedError)
			expect(error).toMatchObject({ option })
			expect((error as Error).message).toContain(option)
			expect(api.calls).toEqual([])
		},
	)
})

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
