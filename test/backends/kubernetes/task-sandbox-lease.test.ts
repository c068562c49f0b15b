// The lease of a live Kubernetes task sandbox, through the real handle createKubernetesTaskSandbox
// returns (a REAL deprivileged agent answers the probe and the calls; the scripted API port answers
// the cluster side). claimTtlSeconds 2 puts a renewal every ~1 s and bounds each PATCH at 250 ms.
// The pure schedule and the failure backoff are pinned in task-backend-rules.test.ts.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterEach, describe, expect, it } from 'vitest'
import type { KubernetesApiPort } from '../../../src/backends/kubernetes/kubernetes-api-port.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import { leaseRenewalTimeoutMs } from '../../../src/backends/kubernetes/lease-schedule.js'
import { KubernetesSandboxGoneError, type Sandbox } from '../../../src/index.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { scriptedBackendBase } from './local-guest-config.js'
import {
	pod,
	type RecordedCall,
	readyClaim,
	type ScriptedApi,
	scriptedApi,
	statusError,
} from './scripted-api-port.js'

const TTL_SECONDS = 2
const MAX_INTERVAL_MS = TTL_SECONDS * 1000 * 0.55

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()))
})

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

interface Patch {
	readonly call: RecordedCall
	readonly atMs: number
}

interface Leased {
	readonly sandbox: KubernetesTaskSandbox
	readonly api: ScriptedApi
	readonly patches: Patch[]
	readonly reported: Error[]
	readonly dials: () => number
	readonly resolvedAtMs: number
}

/**
 * A leased handle; `patch` answers each renewal PATCH (1-based count), `mergePatch` may replace
 * the port's PATCH entirely (to see its signal).
 */
async function leased(
	options: {
		patch?: (count: number) => unknown
		mergePatch?: (inner: KubernetesApiPort['mergePatch']) => KubernetesApiPort['mergePatch']
		/** Clean up through a WeakRef only, so the test itself holds no reference to the handle. */
		weak?: boolean
	} = {},
): Promise<Leased> {
	const token = randomUUID()
	const agent: GuestAgent = await startGuestAgent({ token })
	cleanups.push(() => agent.stop())
	const patches: Patch[] = []
	const api = scriptedApi((call) => {
		if (call.verb === 'POST') return call.body
		if (call.verb === 'DELETE') return {}
		if (call.verb === 'PATCH') {
			patches.push({ call, atMs: Date.now() })
			return options.patch ? options.patch(patches.length) : {}
		}
		if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-leased')
		return pod(token, '127.0.0.1')
	})
	const port: KubernetesApiPort = options.mergePatch
		? { ...api.port, mergePatch: options.mergePatch(api.port.mergePatch) }
		: api.port
	const reported: Error[] = []
	let dials = 0
	const config = resolveKubernetesBackendConfig({
		...scriptedBackendBase,
		agentAddress: 'pod-ip',
		agentPort: agent.port,
		claimTtlSeconds: TTL_SECONDS,
		onLeaseRenewalError: (error) => reported.push(error),
		onDialAttempt: () => {
			dials++
		},
	})
	const sandbox = await createKubernetesTaskSandbox(port, config, { rootDir: agent.workspace })
	const resolvedAtMs = Date.now()
	if (!(sandbox instanceof KubernetesTaskSandbox)) throw new Error('not a KubernetesTaskSandbox')
	if (options.weak) {
		const ref = new WeakRef(sandbox)
		cleanups.unshift(async () => ref.deref()?.destroy())
	} else {
		cleanups.unshift(() => sandbox.destroy())
	}
	const afterAcquire = dials
	return { sandbox, api, patches, reported, dials: () => dials - afterAcquire, resolvedAtMs }
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
	const deadline = Date.now() + timeoutMs
	for (;;) {
		const value = probe()
		if (value !== undefined) return value
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
		await sleep(20)
	}
}

/** The path of the claim the acquire POSTed: its collection plus the name it chose. */
function claimPath(api: ScriptedApi): string {
	const post = api.calls.find((call) => call.verb === 'POST')
	const name = (post?.body as { metadata?: { name?: string } } | undefined)?.metadata?.name
	return `${post?.path}/${name}`
}

async function refusal(call: () => unknown): Promise<unknown> {
	try {
		const value = call()
		if (value && typeof value === 'object' && Symbol.asyncIterator in value) {
			for await (const _ of value as AsyncIterable<unknown>) break
		} else {
			await value
		}
	} catch (error) {
		return error
	}
	return undefined
}

describe('the lease of a live Kubernetes task sandbox', () => {
	it("merge-PATCHes the claim's shutdownTime one TTL ahead about every half TTL while the handle lives", async () => {
		const { api, patches, resolvedAtMs } = await leased()
		await until('two renewals', () => (patches.length >= 2 ? true : undefined))
		// No PATCH before create() resolved: the lease starts on a handle that exists.
		expect(patches.every((patch) => patch.atMs >= resolvedAtMs)).toBe(true)
		for (const patch of patches) {
			expect(patch.call.path).toBe(claimPath(api))
			const body = patch.call.body as { spec: { lifecycle: { shutdownTime: string } } }
			expect(Object.keys(body)).toEqual(['spec'])
			const aheadMs = Date.parse(body.spec.lifecycle.shutdownTime) - patch.atMs
			// now + TTL, to the second.
			expect(aheadMs).toBeGreaterThan(TTL_SECONDS * 1000 - 1500)
			expect(aheadMs).toBeLessThanOrEqual(TTL_SECONDS * 1000)
		}
		// Half a TTL (1000 ms) jittered ±10%: never before 900 ms; loosely bounded above.
		const first = patches[0] as Patch
		const second = patches[1] as Patch
		expect(first.atMs - resolvedAtMs).toBeGreaterThanOrEqual(880)
		expect(second.atMs - first.atMs).toBeGreaterThanOrEqual(880)
		expect(second.atMs - first.atMs).toBeLessThan(MAX_INTERVAL_MS + 2000)
	})

	it('destroy() stops the renewal loop: no PATCH is sent after it', async () => {
		const { sandbox, patches } = await leased()
		await until('a first renewal', () => (patches.length >= 1 ? true : undefined))
		await sandbox.destroy()
		const atDestroy = patches.length
		await sleep(MAX_INTERVAL_MS * 2 + 300)
		expect(patches.length).toBe(atDestroy)
	})

	it('abandons a renewal PATCH still unanswered at its own bound (a quarter interval) and retries it', async () => {
		const bound = leaseRenewalTimeoutMs(TTL_SECONDS)
		expect(bound).toBe(250)
		const aborts: Array<{ reason: unknown; afterMs: number }> = []
		let attempt = 0
		const { patches, reported } = await leased({
			mergePatch: (inner) => (path, body, options) => {
				attempt++
				if (attempt > 1) return inner(path, body, options)
				// The first renewal is accepted and never answered.
				const started = Date.now()
				return new Promise((_, reject) => {
					options?.signal?.addEventListener('abort', () => {
						aborts.push({ reason: options.signal?.reason, afterMs: Date.now() - started })
						reject(options.signal?.reason)
					})
				})
			},
		})
		await until('the retried renewal', () => (patches.length >= 1 ? true : undefined), 15_000)
		expect(aborts).toHaveLength(1)
		const [abandoned] = aborts
		expect(abandoned?.reason).toMatchObject({ name: 'TimeoutError' })
		expect(abandoned?.afterMs).toBeGreaterThanOrEqual(bound - 20)
		expect(abandoned?.afterMs).toBeLessThan(5000)
		expect(reported).toHaveLength(1)
		expect(attempt).toBe(2)
	})

	it('a renewal that finds the claim deleted (404) stops the loop and marks the handle gone', async () => {
		const { sandbox, patches } = await leased({
			patch: () => {
				throw statusError('PATCH', 'claim', 404)
			},
		})
		await until('the handle marked gone', () => (sandbox.gone ? true : undefined))
		expect(sandbox.status).toBe('destroyed')
		await sleep(MAX_INTERVAL_MS * 2 + 300)
		expect(patches).toHaveLength(1)
	})

	it('once gone, every call throws KubernetesSandboxGoneError naming it, without dialing the agent', async () => {
		const { sandbox, dials } = await leased({
			patch: () => {
				throw statusError('PATCH', 'claim', 410)
			},
		})
		await until('the handle marked gone', () => (sandbox.gone ? true : undefined))
		const handle: Sandbox = sandbox
		const calls: Array<[string, () => unknown]> = [
			['exec', () => handle.exec('true')],
			['writeFile', () => handle.writeFile('x', 'y')],
			['readFile', () => handle.readFile('x')],
			['readFileStream', () => handle.readFileStream?.('x')],
			['listFiles', () => handle.listFiles('.')],
			['walkFiles', () => handle.walkFiles?.('.', { maxEntries: 10 })],
			['openTerminal', () => handle.openTerminal?.({ size: { cols: 80, rows: 24 } })],
			['openTcpConnection', () => handle.openTcpConnection?.({ port: 80 })],
		]
		for (const [operation, call] of calls) {
			const error = await refusal(call)
			expect(error, operation).toBeInstanceOf(KubernetesSandboxGoneError)
			expect(error, operation).toMatchObject({ operation })
			expect((error as Error).message, operation).toContain(`${operation}()`)
		}
		expect(dials()).toBe(0)
	})

	it('keeps renewing a handle that was dropped without destroy(), garbage collection notwithstanding', async () => {
		// Only the PATCH log leaves this function; the handle is dropped with its scope.
		const dropped = async (): Promise<Patch[]> => (await leased({ weak: true })).patches
		const patches = await dropped()
		setFlagsFromString('--expose-gc')
		const gc = runInNewContext('gc') as () => void
		gc()
		gc()
		const afterGc = patches.length
		await until('two renewals after the handle was dropped and collected for', () =>
			patches.length >= afterGc + 2 ? true : undefined,
		)
		expect(patches.length).toBeGreaterThanOrEqual(2)
	})

	it('the Kubernetes guide says a dropped handle keeps renewing and destroy() is required for cleanup in a long-lived host', () => {
		const kubernetes = readFileSync(
			join(import.meta.dirname, '../../../docs/guides/kubernetes-reference.md'),
			'utf8',
		)
		expect(kubernetes).toMatch(/keeps renewing/)
		expect(kubernetes).toMatch(/long-lived host/)
		expect(kubernetes).toMatch(/`destroy\(\)`/)
	})
})
