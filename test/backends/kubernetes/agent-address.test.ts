// How a Kubernetes task sandbox is addressed and dialed: `agentAddress` and its default, a Service
// FQDN whose lookup fails temporarily (EAI_AGAIN) or for good (ENOTFOUND), and the two dial hooks
// (`permanentDialFailure`, `onDialAttempt`) of the shared transport, present and absent. The guest
// is the REAL agent bundle over token TCP. This machine's resolver only ever answers NXDOMAIN, so
// a temporary resolver failure is scripted by replacing `dns.lookup` for the one Service name.
import { randomUUID } from 'node:crypto'
import dns from 'node:dns'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { AgentTransport, type AgentTransportOptions } from '../../../src/agent-entry.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { dialAgent } from '../../../src/host/transport/dial.js'
import * as root from '../../../src/index.js'
import {
	AgentDialFailedError,
	KubernetesAgentAddressUnresolvableError,
	type KubernetesBackendConfig,
	SandboxConfigError,
} from '../../../src/index.js'
import type * as kubernetes from '../../../src/kubernetes-entry.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { rejectionError } from './error-chain.js'
import { scriptedBackendBase } from './local-guest-config.js'
import { pod, warmClaimApi } from './scripted-api-port.js'

const cleanups: Array<() => unknown> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const fqdn = 'pool-dns.ns.svc.cluster.local'

/** Answers lookups of `fqdn` with `answer(call)`; every other name goes to the real resolver. */
function scriptLookup(answer: (call: number) => string | NodeJS.ErrnoException): {
	calls: number[]
} {
	const original = dns.lookup
	const calls: number[] = []
	const scripted = ((hostname: string, options: unknown, callback: unknown) => {
		if (hostname !== fqdn) {
			return (original as (...args: unknown[]) => void)(hostname, options, callback)
		}
		const done = (typeof options === 'function' ? options : callback) as (
			error: NodeJS.ErrnoException | null,
			address?: string,
			family?: number,
		) => void
		calls.push(performance.now())
		const result = answer(calls.length)
		const all = typeof options === 'object' && options !== null && 'all' in options && options.all
		process.nextTick(() => {
			if (typeof result !== 'string') done(result)
			else if (all)
				(done as unknown as (e: null, a: object[]) => void)(null, [{ address: result, family: 4 }])
			else done(null, result, 4)
		})
	}) as typeof dns.lookup
	dns.lookup = scripted
	cleanups.push(() => {
		dns.lookup = original
	})
	return { calls }
}

function resolverError(code: 'EAI_AGAIN' | 'ENOTFOUND'): NodeJS.ErrnoException {
	return Object.assign(new Error(`getaddrinfo ${code} ${fqdn}`), {
		code,
		errno: code === 'EAI_AGAIN' ? -3001 : -3008,
		syscall: 'getaddrinfo',
		hostname: fqdn,
	})
}

async function guest(): Promise<GuestAgent & { token: string }> {
	const token = randomUUID()
	const agent = await startGuestAgent({ token })
	cleanups.push(() => agent.stop())
	return Object.assign(agent, { token })
}

function serviceModeConfig(
	agent: GuestAgent & { token: string },
	overrides: Partial<KubernetesBackendConfig> = {},
) {
	const api = warmClaimApi('pool-dns', () => pod(agent.token, '10.0.0.1'))
	const config = resolveKubernetesBackendConfig({
		...scriptedBackendBase,
		agentPort: agent.port,
		...overrides,
	})
	return { api, config }
}

describe('agentAddress', () => {
	it("accepts 'service' and 'pod-ip', defaults to 'service', and refuses anything else", () => {
		const base = {
			tier: 'microvm',
			service: 'kubernetes',
			namespace: 'ns',
			access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
			sandboxTemplateName: 'task',
		} as const
		expectTypeOf<kubernetes.KubernetesAgentAddressMode>().toEqualTypeOf<'service' | 'pod-ip'>()
		expectTypeOf<KubernetesBackendConfig['agentAddress']>().toEqualTypeOf<
			'service' | 'pod-ip' | undefined
		>()
		expect(resolveKubernetesBackendConfig(base).agentAddress).toBe('service')
		expect(resolveKubernetesBackendConfig({ ...base, agentAddress: 'service' }).agentAddress).toBe(
			'service',
		)
		expect(resolveKubernetesBackendConfig({ ...base, agentAddress: 'pod-ip' }).agentAddress).toBe(
			'pod-ip',
		)
		expect(() =>
			resolveKubernetesBackendConfig({ ...base, agentAddress: 'node-ip' as 'service' }),
		).toThrow(SandboxConfigError)
	})
})

describe('a Service name whose lookup fails', () => {
	it('keeps retrying through EAI_AGAIN and reaches the guest once the name resolves', async () => {
		const agent = await guest()
		const lookups = scriptLookup((call) => (call <= 3 ? resolverError('EAI_AGAIN') : '127.0.0.1'))
		const { api, config } = serviceModeConfig(agent, { readyTimeoutMs: 10_000 })
		const sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})
		cleanups.push(() => sandbox.destroy())
		expect(lookups.calls.length).toBeGreaterThan(3)
		expect(await sandbox.exec('echo', ['resolved'])).toMatchObject({ stdout: 'resolved\n' })
	})

	it('reports EAI_AGAIN as KubernetesAgentAddressUnresolvableError only once the 30 s connect budget is spent', async () => {
		const agent = await guest()
		let failing = false
		const lookups = scriptLookup(() => (failing ? resolverError('EAI_AGAIN') : '127.0.0.1'))
		const { api, config } = serviceModeConfig(agent, { readyTimeoutMs: 10_000 })
		const sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})
		cleanups.push(() => sandbox.destroy())
		failing = true
		const before = lookups.calls.length
		const started = performance.now()
		const error = await rejectionError(sandbox.readFile('anything'))
		expect(error).toBeInstanceOf(KubernetesAgentAddressUnresolvableError)
		expect(error).toMatchObject({ address: fqdn, code: 'EAI_AGAIN', retryable: true })
		expect((error as Error).message).toContain("agentAddress: 'pod-ip'")
		expect(performance.now() - started).toBeGreaterThanOrEqual(29_000)
		expect(lookups.calls.length - before).toBeGreaterThan(50)
	}, 60_000)

	it('stops at the first ENOTFOUND instead of spending the connect budget', async () => {
		const agent = await guest()
		const lookups = scriptLookup(() => resolverError('ENOTFOUND'))
		const attempts: string[] = []
		const { api, config } = serviceModeConfig(agent, {
			readyTimeoutMs: 30_000,
			onDialAttempt: ({ host }) => attempts.push(host),
		})
		const started = performance.now()
		const error = await rejectionError(
			createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace }),
		)
		expect(error).toBeInstanceOf(KubernetesAgentAddressUnresolvableError)
		expect(error).toMatchObject({ address: fqdn, code: 'ENOTFOUND' })
		expect(lookups.calls).toHaveLength(1)
		expect(attempts).toEqual([fqdn])
		expect(performance.now() - started).toBeLessThan(5000)
	})
})

describe('the dial hooks', () => {
	it('calls onDialAttempt once per connect attempt, before the attempt is made', async () => {
		const lookups = scriptLookup(() => resolverError('EAI_AGAIN'))
		const seen: Array<{ attempt: number; lookupsBefore: number }> = []
		const transport = new AgentTransport(
			{ kind: 'tcp', host: fqdn, port: 1024, token: 't' },
			{
				connectRetryBudgetMs: 500,
				connectRetryIntervalMs: 50,
				onDialAttempt: ({ attempt }) => seen.push({ attempt, lookupsBefore: lookups.calls.length }),
			},
		)
		await rejectionError(transport.healthz())
		expect(seen.length).toBeGreaterThan(2)
		expect(seen.length).toBe(lookups.calls.length)
		seen.forEach((event, index) => {
			expect(event).toEqual({ attempt: index + 1, lookupsBefore: index })
		})
	})

	it('without either hook, retries every dial error, ENOTFOUND included, for the whole connect budget', async () => {
		const lookups = scriptLookup(() => resolverError('ENOTFOUND'))
		const options: AgentTransportOptions = { connectRetryBudgetMs: 800, connectRetryIntervalMs: 50 }
		expect(options).not.toHaveProperty('permanentDialFailure')
		expect(options).not.toHaveProperty('onDialAttempt')
		const transport = new AgentTransport(
			{ kind: 'tcp', host: fqdn, port: 1024, token: 't' },
			options,
		)
		const started = performance.now()
		const error = await rejectionError(transport.healthz())
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect(error).toMatchObject({ reason: 'dial-failed', retryable: true })
		expect((error as Error).cause).toMatchObject({ code: 'ENOTFOUND' })
		expect(performance.now() - started).toBeGreaterThanOrEqual(700)
		expect(lookups.calls.length).toBeGreaterThan(5)
	})

	it('gives up with AgentDialFailedError, carrying the last dial error, when no socket was ever obtained', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-dial-'))
		cleanups.push(() => rm(dir, { recursive: true, force: true }))
		const error = await rejectionError(
			dialAgent(
				{ kind: 'unix', path: join(dir, 'absent.sock') },
				{
					connectTimeoutMs: 1000,
					connectRetryBudgetMs: 200,
					connectRetryIntervalMs: 50,
					permanentDialFailure: () => false,
				},
			),
		)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect((error as Error).cause).toMatchObject({ code: 'ENOENT' })
	})
})

describe('package root', () => {
	it('exports AgentDialFailedError and KubernetesAgentAddressUnresolvableError', () => {
		expect(root.AgentDialFailedError).toBe(AgentDialFailedError)
		expect(root.KubernetesAgentAddressUnresolvableError).toBe(
			KubernetesAgentAddressUnresolvableError,
		)
		expect(new KubernetesAgentAddressUnresolvableError(fqdn, 'ENOTFOUND').name).toBe(
			'KubernetesAgentAddressUnresolvableError',
		)
	})
})

describe('documentation', () => {
	it("says 'pod-ip' needs a route into the pod network and a NetworkPolicy admitting the host on agentPort", () => {
		const guide = join(
			import.meta.dirname,
			'..',
			'..',
			'..',
			'docs',
			'guides',
			'kubernetes-reference.md',
		)
		const paragraph = readFileSync(guide, 'utf8')
			.split('\n\n')
			.find((block) => block.includes("From outside, use `'pod-ip'`"))
		expect(paragraph).toBeDefined()
		expect(paragraph).toMatch(/route into the pod network/)
		expect(paragraph).toMatch(
			/`NetworkPolicy` that lets the host's address range in on\s+`agentPort`/,
		)
	})
})
