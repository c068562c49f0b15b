// Table tests of the task backend's pure rules: config validation and defaults, the objects it
// creates, what one readiness read means, how an API failure is treated, the pod diagnosis and the
// lease schedule.
import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	buildDirectSandbox,
	buildSandboxClaim,
	shutdownTimeAt,
	shutdownTimePatch,
	TEMPLATE_LABEL,
} from '../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	leaseIntervalMs,
	leaseRenewalTimeoutMs,
	leaseRetryDelayMs,
	nextLeaseDelayMs,
} from '../../../src/backends/kubernetes/lease-schedule.js'
import {
	acquireReasonForApiFailure,
	apiFailureShape,
	diagnosePod,
	evaluateClaimReadiness,
	evaluateSandboxReadiness,
	isRetryableReadFailure,
	nextPollDelayMs,
} from '../../../src/backends/kubernetes/readiness.js'
import {
	KubernetesAcquireError,
	KubernetesApiTimeoutError,
	type KubernetesBackendConfig,
	SandboxConfigError,
	TERMINAL_CLAIM_REASONS,
} from '../../../src/index.js'
import { connectError, statusError } from './scripted-api-port.js'

const base: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: 'sandboxes',
	access: { server: 'https://127.0.0.1:6443', getToken: () => 't' },
	sandboxTemplateName: 'task',
}

describe('KubernetesBackendConfig', () => {
	it('fills the documented defaults', () => {
		const resolved = resolveKubernetesBackendConfig(base)
		expect(resolved).toMatchObject({
			agentPort: 1024,
			agentAddress: 'service',
			readyPollIntervalMs: 50,
			readyTimeoutMs: 60_000,
			claimTtlSeconds: 3600,
			streamHeartbeatMs: 15_000,
			claimLabels: {},
		})
		expect(resolved.warmPoolName).toBeUndefined()
	})

	it.each([
		['namespace', { namespace: 'Not_A_Name' }],
		['agentAddress', { agentAddress: 'dns' }],
		['agentPort', { agentPort: 0 }],
		['readyTimeoutMs', { readyTimeoutMs: -1 }],
		['readyPollIntervalMs', { readyPollIntervalMs: 1.5 }],
		['claimTtlSeconds', { claimTtlSeconds: 0 }],
		['apiRequestTimeoutMs', { apiRequestTimeoutMs: 999 }],
		['streamHeartbeatMs', { streamHeartbeatMs: -5 }],
		['claimLabels', { claimLabels: { 'bad key!': 'x' } }],
		['claimLabels', { claimLabels: { 'host.example/instance': 'no spaces' } }],
		['warmPoolName', { warmPoolName: 'UPPER' }],
		['onLeaseRenewalError', { onLeaseRenewalError: 'not a function' }],
	])('refuses a bad %s at construction, naming the field', (field, override) => {
		const config = { ...base, ...override } as unknown as KubernetesBackendConfig
		let caught: unknown
		try {
			resolveKubernetesBackendConfig(config)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(SandboxConfigError)
		expect((caught as SandboxConfigError).field).toBe(field)
	})

	it('accepts a heartbeat of 0 (off) and keeps claim labels as given', () => {
		const resolved = resolveKubernetesBackendConfig({
			...base,
			streamHeartbeatMs: 0,
			claimLabels: { 'host.example.com/instance': 'web-7' },
		})
		expect(resolved.streamHeartbeatMs).toBe(0)
		expect(resolved.claimLabels).toEqual({ 'host.example.com/instance': 'web-7' })
	})
})

describe('created objects', () => {
	const shutdownTime = shutdownTimeAt(Date.UTC(2030, 0, 1, 12, 0, 0, 500), 3600)

	it('stamps an absolute shutdownTime one TTL after now, to the second', () => {
		expect(shutdownTime).toBe('2030-01-01T13:00:00Z')
	})

	it('builds a pristine claim: pool reference, lifecycle and host labels only', () => {
		const claim = buildSandboxClaim({
			name: 'namzu-task-abc',
			warmPoolName: 'pool',
			shutdownTime,
			claimLabels: { 'host.example.com/instance': 'web-7' },
		})
		expect(claim).toEqual({
			apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
			kind: 'SandboxClaim',
			metadata: { name: 'namzu-task-abc', labels: { 'host.example.com/instance': 'web-7' } },
			spec: {
				warmPoolRef: { name: 'pool' },
				lifecycle: { shutdownTime, shutdownPolicy: 'Delete' },
			},
		})
		expect(JSON.stringify(claim)).not.toMatch(
			/"env"|volumeClaimTemplates|additionalPodMetadata|ttlSecondsAfterFinished/,
		)
	})

	it('writes no labels key on a claim when the host set no claimLabels', () => {
		const claim = buildSandboxClaim({ name: 'n', warmPoolName: 'p', shutdownTime, claimLabels: {} })
		expect(claim.metadata).toEqual({ name: 'n' })
	})

	it('builds a direct Sandbox from the template with its volumeClaimTemplates verbatim and the template label', () => {
		const volumeClaimTemplates = [
			{ metadata: { name: 'workspace' }, spec: { volumeMode: 'Block', resources: {} } },
		]
		const sandbox = buildDirectSandbox({
			name: 'namzu-task-xyz',
			templateName: 'task',
			shutdownTime,
			template: {
				metadata: { name: 'task' },
				spec: {
					podTemplate: {
						metadata: { labels: { app: 'agent' } },
						spec: { containers: [{ name: 'agent' }] },
					},
					volumeClaimTemplates,
					service: true,
					networkPolicyManagement: 'Unmanaged',
				},
			},
		})
		expect(sandbox.kind).toBe('Sandbox')
		expect(sandbox.spec).toEqual({
			podTemplate: {
				metadata: { labels: { app: 'agent', [TEMPLATE_LABEL]: 'task' } },
				spec: { containers: [{ name: 'agent' }] },
			},
			volumeClaimTemplates,
			service: true,
			shutdownTime,
			shutdownPolicy: 'Delete',
		})
		expect(sandbox.spec?.volumeClaimTemplates).toBe(volumeClaimTemplates)
		expect(JSON.stringify(sandbox)).not.toContain('ttlSecondsAfterFinished')
	})

	it.each([
		['claim', { spec: { lifecycle: { shutdownTime: 'T' } } }],
		['sandbox', { spec: { shutdownTime: 'T' } }],
	] as const)('renews a %s by merge-patching its own shutdownTime field', (kind, body) => {
		expect(shutdownTimePatch(kind, 'T')).toEqual(body)
	})
})

const claimWith = (ready: object | undefined, sandbox?: string) => ({
	metadata: { name: 'c' },
	status: {
		...(sandbox ? { sandbox: { name: sandbox } } : {}),
		conditions: ready ? [{ type: 'Ready', ...ready }] : [],
	},
})

describe('one readiness read', () => {
	it('lists exactly the four terminal claim reasons', () => {
		expect([...TERMINAL_CLAIM_REASONS].sort()).toEqual(
			[
				'EnvVarsInjectionRejected',
				'InvalidMetadata',
				'TemplateNotFound',
				'WarmPoolNotFound',
			].sort(),
		)
	})

	it.each(TERMINAL_CLAIM_REASONS.map((reason) => [reason]))(
		'treats Ready reason %s as a refusal, carrying the controller reason and message',
		(reason) => {
			expect(
				evaluateClaimReadiness(claimWith({ status: 'False', reason, message: 'why' })),
			).toEqual({ state: 'rejected', controllerReason: reason, controllerMessage: 'why' })
		},
	)

	it.each([
		['SandboxNotReady'],
		['DependenciesNotReady'],
		['ReconcilerError'],
		['VolumeClaimTemplatesError'],
		['SomethingNew'],
	])('keeps polling on the non-terminal reason %s', (reason) => {
		expect(evaluateClaimReadiness(claimWith({ status: 'False', reason })).state).toBe('pending')
	})

	it('takes the bound sandbox name from status.sandbox, not the claim name', () => {
		expect(
			evaluateClaimReadiness(claimWith({ status: 'True', reason: 'DependenciesReady' }, 'pool-x1')),
		).toEqual({ state: 'ready', sandboxName: 'pool-x1' })
	})

	it('reports a claim Ready without a sandbox name as its own state', () => {
		expect(evaluateClaimReadiness(claimWith({ status: 'True' })).state).toBe(
			'ready-without-sandbox',
		)
	})

	it('reads a direct Sandbox as ready only on Ready=True', () => {
		const sandbox = (status: string) => ({
			metadata: { name: 's1' },
			status: { conditions: [{ type: 'Ready', status }] },
		})
		expect(evaluateSandboxReadiness(sandbox('True'))).toEqual({
			state: 'ready',
			sandboxName: 's1',
		})
		expect(evaluateSandboxReadiness(sandbox('False')).state).toBe('pending')
	})
})

describe('API failures during readiness', () => {
	const timeout = new KubernetesApiTimeoutError('GET', '/x', 1000)
	it.each([
		['a connect failure', connectError('GET', '/x'), true, 'api-unreachable'],
		['a request timeout', timeout, true, 'api-timeout'],
		['a 429', statusError('GET', '/x', 429), true, 'api-unreachable'],
		['a 503', statusError('GET', '/x', 503), true, 'api-unreachable'],
		['a 500', statusError('GET', '/x', 500), true, 'api-unreachable'],
		['a 403', statusError('GET', '/x', 403), false, 'forbidden'],
		['a 401', statusError('GET', '/x', 401), false, 'forbidden'],
		['a 400 from a webhook', statusError('GET', '/x', 400), false, undefined],
		['a 404', statusError('GET', '/x', 404), false, undefined],
		['a plain Error', new Error('boom'), false, undefined],
	])('%s: retried=%s, reason %s', (_label, error, retried, reason) => {
		const shape = apiFailureShape(error)
		expect(isRetryableReadFailure(shape)).toBe(retried)
		expect(acquireReasonForApiFailure(shape)).toBe(reason)
	})

	it.each([
		[50, undefined, 50],
		[50, 1000, 1000],
		[2000, 500, 2000],
	])('waits max(interval %i, Retry-After %s) = %i ms', (interval, retryAfterMs, expected) => {
		expect(
			nextPollDelayMs(interval, apiFailureShape(statusError('GET', '/x', 429, retryAfterMs))),
		).toBe(expected)
	})

	it('gives KubernetesAcquireError a boolean retryable per reason', () => {
		const table = Object.fromEntries(
			(
				[
					'api-unreachable',
					'api-timeout',
					'forbidden',
					'claim-rejected',
					'capacity',
					'image-pull',
					'not-ready',
				] as const
			).map((reason) => [reason, new KubernetesAcquireError(reason).retryable]),
		)
		expect(table).toEqual({
			'api-unreachable': true,
			'api-timeout': true,
			forbidden: false,
			'claim-rejected': false,
			capacity: true,
			'image-pull': false,
			'not-ready': true,
		})
	})
})

describe('the diagnostic pod read', () => {
	it.each([
		[
			'PodScheduled=False/Unschedulable',
			{ conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] },
			'capacity',
		],
		[
			'a waiting ErrImagePull container',
			{ containerStatuses: [{ state: { waiting: { reason: 'ErrImagePull' } } }] },
			'image-pull',
		],
		[
			'a waiting ImagePullBackOff init container',
			{ initContainerStatuses: [{ state: { waiting: { reason: 'ImagePullBackOff' } } }] },
			'image-pull',
		],
		[
			'a pending pod with nothing to say',
			{ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
			undefined,
		],
	])('reads %s as %s', (_label, status, reason) => {
		expect(diagnosePod({ metadata: { name: 'p' }, status })?.reason).toBe(reason)
	})
})

describe('the lease schedule', () => {
	it('renews every half TTL jittered ±10%', () => {
		expect(leaseIntervalMs(3600, 0)).toBe(1_620_000)
		expect(leaseIntervalMs(3600, 0.5)).toBe(1_800_000)
		expect(leaseIntervalMs(3600, 0.999_999)).toBeLessThanOrEqual(1_980_000)
		expect(leaseIntervalMs(3600, 0.999_999)).toBeGreaterThan(1_979_000)
	})

	it.each([
		[3600, 30_000],
		[200, 25_000],
		[20, 2500],
	])(
		'bounds each PATCH of a %i s TTL at %i ms (a quarter interval, at most 30 s)',
		(ttl, bound) => {
			expect(leaseRenewalTimeoutMs(ttl)).toBe(bound)
		},
	)

	it.each([
		[3600, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]],
		[200, [1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]],
	])('after failures on a %i s TTL retries at %j', (ttl, delays) => {
		expect(delays.map((_, index) => leaseRetryDelayMs(index + 1, ttl))).toEqual(delays)
	})

	it('returns to the jittered half TTL after a success', () => {
		expect(nextLeaseDelayMs({ ok: false, consecutiveFailures: 3 }, 3600, 0.5)).toBe(4000)
		expect(nextLeaseDelayMs({ ok: true }, 3600, 0.5)).toBe(1_800_000)
	})

	it('gets several attempts in before the expiry after a failure at a renewal', () => {
		// Renewal at ≤ 1.1 × TTL/2 after the last success; the object expires at 1 × TTL.
		const ttl = 3600
		let elapsed = leaseIntervalMs(ttl, 0.999_999)
		let attempts = 0
		for (let failures = 1; elapsed < ttl * 1000; failures++) {
			attempts++
			elapsed += leaseRetryDelayMs(failures, ttl)
		}
		expect(attempts).toBeGreaterThan(10)
	})
})
