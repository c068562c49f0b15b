// The acquire's failure taxonomy end to end through acquireTaskSandbox, against a scripted API
// port (faults the real API server cannot be made to produce on cue): which readiness failures are
// retried and on what clock, which end the acquire and with what reason and cause, the terminal
// claim reasons (and only those) ending the poll on the read that shows them, the create POST sent
// once whatever happens to it, and the refusals the taxonomy cannot name travelling as themselves.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, expectTypeOf, it } from 'vitest'
import * as agentEntry from '../../../src/agent-entry.js'
import { acquireTaskSandbox } from '../../../src/backends/kubernetes/acquire-task-sandbox.js'
import { createKubernetesClient } from '../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import * as root from '../../../src/index.js'
import {
	KubernetesAcquireError,
	type KubernetesAcquireFailureReason,
	KubernetesApiTimeoutError,
	type KubernetesBackendConfig,
	ReadinessPollTimeout,
	TERMINAL_CLAIM_REASONS,
} from '../../../src/index.js'
import { base as acquireBase } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import {
	connectError,
	pendingClaim,
	pod,
	readyClaim,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

const base: KubernetesBackendConfig = { ...acquireBase, readyTimeoutMs: 300 }
const config = (overrides: Partial<KubernetesBackendConfig> = {}) =>
	resolveKubernetesBackendConfig({ ...base, ...overrides })

const verbs = (lines: readonly string[]) => lines.map((line) => line.split(' ')[0])

describe('the reason field', () => {
	it('types reason as KubernetesAcquireFailureReason, exactly the seven names', () => {
		expectTypeOf<KubernetesAcquireError['reason']>().toEqualTypeOf<KubernetesAcquireFailureReason>()
		expectTypeOf<KubernetesAcquireFailureReason>().toEqualTypeOf<
			| 'api-unreachable'
			| 'api-timeout'
			| 'forbidden'
			| 'claim-rejected'
			| 'capacity'
			| 'image-pull'
			| 'not-ready'
		>()
		expectTypeOf<KubernetesAcquireError['retryable']>().toEqualTypeOf<boolean>()
		const error = new KubernetesAcquireError('capacity')
		expect(error.reason).toBe('capacity')
		expect(error).toBeInstanceOf(Error)
		expect(error.name).toBe('KubernetesAcquireError')
	})
})

describe('readiness reads that fail', () => {
	const timeout = () => new KubernetesApiTimeoutError('GET', '/c', 1000)
	it.each([
		['a connection failure', () => connectError('GET', '/c'), 'api-unreachable', true],
		['an apiRequestTimeoutMs expiry', timeout, 'api-timeout', true],
		['a 403 (authorization)', () => statusError('GET', '/c', 403), 'forbidden', false],
	] as const)(
		'ends with the reason of %s that never recovers, carrying that very failure as cause',
		async (_label, make, reason, retried) => {
			let reads = 0
			let last: Error | undefined
			const api = scriptedApi((call) => {
				if (call.verb === 'POST') return call.body
				if (call.verb === 'DELETE') return {}
				if (call.path.includes('/pods/')) throw statusError('GET', call.path, 404)
				reads++
				last = make()
				throw last
			})
			const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
			expect(error).toBeInstanceOf(KubernetesAcquireError)
			expect(error).toMatchObject({ reason })
			expect((error as Error).cause).toBe(last)
			// Retried failures were read again inside the budget; the refusal ended it on the first.
			if (retried) expect(reads).toBeGreaterThan(2)
			else expect(reads).toBe(1)
			expect(verbs(api.log()).at(-1)).toBe('DELETE')
		},
	)

	it('repeats a readiness GET that ended in an apiRequestTimeoutMs expiry and then succeeds', async () => {
		let reads = 0
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/pods/')) return pod('uid-t', '10.0.0.4')
			reads++
			if (reads <= 2) throw new KubernetesApiTimeoutError('GET', call.path, 1000)
			return readyClaim('pool-t')
		})
		const acquired = await acquireTaskSandbox({
			api: api.port,
			config: config({ readyTimeoutMs: 5000 }),
		})
		expect(acquired).toMatchObject({ id: 'pool-t', token: 'uid-t' })
		expect(reads).toBe(3)
	})

	it('drops a failure the poll recovered from: not-ready, and neither its reason nor its text is in the error', async () => {
		let reads = 0
		const recovered = connectError('GET', '/c')
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) return pod('u')
			reads++
			if (reads <= 2) throw recovered
			return pendingClaim('DependenciesNotReady', 'Pod exists with phase: Pending')
		})
		const error = await rejectionError(acquireTaskSandbox({ api: api.port, config: config() }))
		expect(error).toMatchObject({ name: 'KubernetesAcquireError', reason: 'not-ready' })
		const cause = (error as Error).cause
		expect(cause).toBeInstanceOf(ReadinessPollTimeout)
		expect(cause).not.toHaveProperty('cause')
		expect((error as Error).message).not.toMatch(/ECONNREFUSED|connect/)
		expect((cause as Error).message).toContain('DependenciesNotReady')
	})
})

describe('one readiness clock', () => {
	it('never extends the deadline for a Retry-After longer than what is left of it', async () => {
		const readyTimeoutMs = 300
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) return pod('u')
			throw statusError('GET', call.path, 429, 60_000)
		})
		const started = performance.now()
		const error = await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs }) }),
		)
		const elapsedMs = performance.now() - started
		expect(error).toMatchObject({ reason: 'api-unreachable' })
		// The 60 s Retry-After was cut at the budget: no read waited it out (loose time bound).
		const claimReads = api.log().filter((line) => /^GET .*\/sandboxclaims\//.test(line))
		expect(claimReads.length).toBeGreaterThanOrEqual(1)
		expect(claimReads.length).toBeLessThanOrEqual(2)
		expect(elapsedMs).toBeGreaterThanOrEqual(readyTimeoutMs - 20)
		expect(elapsedMs).toBeLessThan(5000)
	})

	it('cuts a readiness read the server never answers at the deadline', async () => {
		const readyTimeoutMs = 300
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/pods/')) return pod('u')
			return new Promise(() => {})
		})
		const port = {
			...api.port,
			// The scripted port honours the signal only on entry; a hung read must honour it later.
			get: (path: string, options?: { signal?: AbortSignal }) =>
				path.includes('/pods/')
					? api.port.get(path, options)
					: new Promise<never>((_, reject) => {
							void api.port.get(path, options)
							options?.signal?.addEventListener('abort', () => reject(options.signal?.reason), {
								once: true,
							})
						}),
		}
		const started = performance.now()
		const error = await rejectionError(
			acquireTaskSandbox({ api: port, config: config({ readyTimeoutMs }) }),
		)
		const elapsedMs = performance.now() - started
		expect(error).toMatchObject({ reason: 'api-timeout' })
		expect(elapsedMs).toBeGreaterThanOrEqual(readyTimeoutMs - 20)
		expect(elapsedMs).toBeLessThan(5000)
	})

	it.each([
		[60_000, 5000],
		[6000, 500],
	])(
		'against an API server that went down after the POST, a %i ms budget rejects when that budget is spent',
		async (readyTimeoutMs, msPerRead) => {
			// A virtual clock: every failed read costs msPerRead, so the budget, not a count of
			// attempts, must be what ends the poll.
			let clock = 0
			const readTimes: number[] = []
			const api = scriptedApi((call) => {
				if (call.verb === 'POST') return call.body
				if (call.verb === 'DELETE') return {}
				if (call.path.includes('/pods/')) throw connectError('GET', call.path)
				readTimes.push(clock)
				clock += msPerRead
				throw connectError('GET', call.path)
			})
			const resolved = config({ readyTimeoutMs })
			const error = await rejectionError(
				acquireTaskSandbox({ api: api.port, config: resolved, now: () => clock }),
			)
			expect(error).toMatchObject({ reason: 'api-unreachable' })
			// Reads kept going until the budget was gone, and stopped there.
			expect(readTimes).toHaveLength(readyTimeoutMs / msPerRead)
			expect(readTimes.at(-1)).toBe(readyTimeoutMs - msPerRead)
			expect(clock).toBe(readyTimeoutMs)
		},
	)
})

describe('the create POST', () => {
	it.each([
		['a connection failure', () => connectError('POST', '/c')],
		['an apiRequestTimeoutMs expiry', () => new KubernetesApiTimeoutError('POST', '/c', 1000)],
		['a 429', () => statusError('POST', '/c', 429, 10)],
		['a 503', () => statusError('POST', '/c', 503)],
		['a 403', () => statusError('POST', '/c', 403)],
		['a 400', () => statusError('POST', '/c', 400)],
	])('is sent exactly once when it fails with %s', async (_label, make) => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') throw make()
			return {}
		})
		await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs: 5000 }) }),
		)
		expect(verbs(api.log()).filter((verb) => verb === 'POST')).toHaveLength(1)
		expect(verbs(api.log()).filter((verb) => verb === 'GET')).toHaveLength(0)
	})
})

describe('terminal and non-terminal claim reasons', () => {
	it.each(TERMINAL_CLAIM_REASONS.map((reason) => [reason]))(
		'ends on the read that first shows %s, with claim-rejected, and polls no further',
		async (reason) => {
			let reads = 0
			const api = scriptedApi((call) => {
				if (call.verb === 'POST') return call.body
				if (call.verb === 'DELETE') return {}
				reads++
				return reads < 3
					? pendingClaim('SandboxNotReady')
					: pendingClaim(reason, `refused: ${reason}`)
			})
			const error = await rejectionError(
				acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs: 60_000 }) }),
			)
			expect(error).toMatchObject({
				name: 'KubernetesAcquireError',
				reason: 'claim-rejected',
				controllerReason: reason,
				controllerMessage: `refused: ${reason}`,
			})
			expect(verbs(api.log())).toEqual(['POST', 'GET', 'GET', 'GET', 'DELETE'])
		},
	)

	it.each([['DependenciesNotReady'], ['ReconcilerError'], ['SomeFutureReason']])(
		'keeps polling a claim whose Ready reason is %s until the deadline, then not-ready',
		async (reason) => {
			const readyTimeoutMs = 300
			const api = scriptedApi((call) => {
				if (call.verb === 'POST') return call.body
				if (call.verb === 'DELETE') return {}
				if (call.path.includes('/pods/')) throw statusError('GET', call.path, 404)
				return pendingClaim(reason, 'not yet')
			})
			const started = performance.now()
			const error = await rejectionError(
				acquireTaskSandbox({ api: api.port, config: config({ readyTimeoutMs }) }),
			)
			expect(performance.now() - started).toBeGreaterThanOrEqual(readyTimeoutMs - 20)
			expect(error).toMatchObject({ reason: 'not-ready' })
			expect((error as Error).cause).toBeInstanceOf(ReadinessPollTimeout)
			expect((error as KubernetesAcquireError).controllerReason).toBeUndefined()
			expect(api.log().filter((line) => line.includes('/sandboxclaims/')).length).toBeGreaterThan(5)
		},
	)
})

describe('refusals the taxonomy cannot name', () => {
	const malformedTemplate = { metadata: { name: 'task' }, spec: { podTemplate: {} } }
	it.each([
		['a malformed template', { warmPoolName: undefined }, 'KubernetesTemplateInvalidError'],
		['a 400 from an admission webhook', {}, 'KubernetesApiError'],
		['a claim Ready that names no sandbox', {}, 'KubernetesClaimUnboundError'],
	] as const)('rethrows %s as the original error', async (label, overrides, name) => {
		let thrown: unknown
		const api = scriptedApi((call) => {
			if (call.path.endsWith('/sandboxtemplates/task')) return malformedTemplate
			if (call.verb === 'POST') {
				if (label.includes('webhook')) {
					thrown = statusError('POST', call.path, 400)
					throw thrown
				}
				return call.body
			}
			if (call.verb === 'DELETE') return {}
			return {
				metadata: { name: 'c' },
				status: { conditions: [{ type: 'Ready', status: 'True' }] },
			}
		})
		const error = await rejectionError(
			acquireTaskSandbox({ api: api.port, config: config(overrides) }),
		)
		expect(error).not.toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ name })
		if (thrown) expect(error).toBe(thrown)
	})
})

describe('KubernetesApiError', () => {
	it('names the verb, the path, the status, the Retry-After sent and whether it was connect or status', async () => {
		const server = createServer((_request, response) => {
			response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' })
			response.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests' }))
		})
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
		const { port } = server.address() as AddressInfo
		try {
			const client = createKubernetesClient({
				server: `http://127.0.0.1:${port}`,
				getToken: () => 't',
			})
			const throttled = await rejectionError(client.get('/api/v1/namespaces/ns/pods/p'))
			expect(throttled).toBeInstanceOf(root.KubernetesApiError)
			expect(throttled).toMatchObject({
				verb: 'GET',
				path: '/api/v1/namespaces/ns/pods/p',
				status: 429,
				retryAfterMs: 3000,
				transport: 'status',
			})
		} finally {
			await new Promise((resolve) => server.close(resolve))
		}
		const refused = await rejectionError(
			createKubernetesClient({ server: `http://127.0.0.1:${port}`, getToken: () => 't' }).get(
				'/version',
			),
		)
		expect(refused).toBeInstanceOf(root.KubernetesApiError)
		expect(refused).toMatchObject({ verb: 'GET', path: '/version', transport: 'connect' })
		expect((refused as root.KubernetesApiError).status).toBeUndefined()
		expectTypeOf<
			root.KubernetesApiError['transport']
		>().toEqualTypeOf<root.KubernetesApiFailureTransport>()
	})
})

describe('package root', () => {
	it('exports the acquire taxonomy and the API error classes by name', () => {
		const values = root as Record<string, unknown>
		for (const name of [
			'KubernetesAcquireError',
			'ReadinessPollTimeout',
			'KubernetesApiError',
			'KubernetesCredentialError',
			'KubernetesAlreadyGoneError',
			'KubernetesConflictError',
		]) {
			expect(typeof values[name], name).toBe('function')
			expect((values[name] as { name: string }).name).toBe(name)
		}
		expect(root.TERMINAL_CLAIM_REASONS).toBe(TERMINAL_CLAIM_REASONS)
		expectTypeOf<root.KubernetesAcquireFailureReason>().toBeString()
		expectTypeOf<root.KubernetesApiFailureTransport>().toEqualTypeOf<'connect' | 'status'>()
	})

	it('still exports every name the package had before the taxonomy, under the same name', () => {
		const values = root as Record<string, unknown>
		// Release 14's Kubernetes surface and the errors the earlier issues exported, at the root.
		for (const name of [
			'createSandboxProvider',
			'AgentDialFailedError',
			'RemoteCancellationUnknownError',
			'SandboxError',
			'SandboxDestroyedError',
			'SandboxPrivilegeProbeError',
			'ReadinessPollTimeout',
		]) {
			expect(typeof values[name], name).toBe('function')
		}
		// What a tier is built from moved, under the same names, to @namzu/sandbox/agent when the
		// root was made deliberate; the two the specification names are on the root as well.
		const tierKit = agentEntry as Record<string, unknown>
		for (const name of ['createAgentSandbox', 'AgentTransport', 'walkFilesViaExec']) {
			expect(typeof tierKit[name], name).toBe('function')
		}
		for (const name of ['walkFilesViaExec', 'RemoteExecutionController']) {
			expect(typeof values[name], name).toBe('function')
			expect(values[name], name).toBe(tierKit[name])
		}
		expectTypeOf<root.KubernetesBackendConfig>().toHaveProperty('access')
		expectTypeOf<root.KubernetesClusterAccess>().not.toBeAny()
		expectTypeOf<
			root.KubernetesBackendConfig['access']
		>().toEqualTypeOf<root.KubernetesClusterAccess>()
	})
})
