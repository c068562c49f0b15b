// The Kubernetes task backend against the local cluster harness, pool-less path (a `Sandbox`
// built from the template): the direct acquire, API faults (an unanswering server, 429/503 during
// readiness), the after-budget pod diagnoses (capacity, image-pull), the privilege probe refusing a
// root guest, `service` mode without cluster DNS, and `pod-ip` mode following a replaced pod.
import { beforeAll, describe, expect, it } from 'vitest'
import {
	KubernetesAcquireError,
	KubernetesAgentAddressUnresolvableError,
	KubernetesApiTimeoutError,
	KubernetesPrivilegeProbeError,
	readKubernetesTaskCapacity,
	type Sandbox,
} from '../../../src/index.js'
import { isReady, type KubeObject, waitGone, waitObject } from '../../cluster/cluster-objects.js'
import { directSandbox, paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { findInChain, rejection } from './error-chain.js'
import {
	listSandboxes,
	privilegedTemplate,
	templateName,
	useKubernetesHarness,
} from './kubernetes-harness.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-direct' })
const open = h.open

beforeAll(async () => {
	await h.cluster.api.create(paths.templates(h.namespace), privilegedTemplate('root-template'))
})

const liveSandboxes = async (): Promise<readonly KubeObject[]> =>
	(await listSandboxes(h.cluster, h.namespace)).filter(
		(sandbox) => sandbox.metadata.deletionTimestamp === undefined,
	)

/**
 * Runs `act` on the first Sandbox object that appears while `acquire` runs (polled every 10 ms).
 * An acquire that succeeds after all is left to the harness to destroy, so one failed case does
 * not leave a Sandbox behind for the next.
 */
async function duringAcquire(
	acquire: () => Promise<Sandbox>,
	act: (name: string) => Promise<void>,
): Promise<{ error: unknown; elapsedMs: number; name: string }> {
	const known = new Set((await listSandboxes(h.cluster, h.namespace)).map((s) => s.metadata.name))
	const pending = rejection(
		acquire().then((sandbox) => {
			open.push(sandbox)
			return sandbox
		}),
	)
	const name = await waitFor(
		'the acquire to create its Sandbox',
		async () =>
			(await listSandboxes(h.cluster, h.namespace)).find((s) => !known.has(s.metadata.name))
				?.metadata.name,
		{ timeoutMs: 30_000, intervalMs: 10 },
	)
	await act(name)
	return { ...(await pending), name }
}

/**
 * An acquire with a 4 s budget under a pod fault set on the whole namespace before its POST (the
 * pod's name is the acquire's to choose, and marking the pod once it shows can lose the race to
 * the kubelet binding it); resolves with its rejection once its Sandbox is deleted.
 */
async function failedAcquireUnder(fault: 'unschedulable' | 'image-pull'): Promise<unknown> {
	const lift = h.cluster.faults.pods.faultNamespace(h.namespace, fault)
	try {
		const { error, name } = await duringAcquire(
			() => h.provider({ readyTimeoutMs: 4_000 }).create(),
			async () => {},
		)
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, name), { timeoutMs: 10_000 })
		return error
	} finally {
		lift()
	}
}

describe('Kubernetes task sandboxes without a pool', () => {
	it('builds a Sandbox from the template with its volume claims, label and Delete lease, runs a command, and destroy deletes it', async () => {
		const sandbox = await h.provider().create()
		open.push(sandbox)
		const object = await h.cluster.api.get<KubeObject>(paths.sandbox(h.namespace, sandbox.id))
		expect(object.metadata.labels?.['sandbox.namzu.ai/template']).toBe(templateName)
		expect(object.spec).toMatchObject({
			shutdownPolicy: 'Delete',
			volumeClaimTemplates: [{ metadata: { name: 'workspace' } }],
		})
		expect(Date.parse(String(object.spec?.shutdownTime)) - Date.now()).toBeGreaterThan(3_000_000)
		const result = await sandbox.exec('sh', ['-c', 'echo data > /workspace/f && cat /workspace/f'])
		expect(result).toMatchObject({ exitCode: 0, stdout: 'data\n' })
		await sandbox.destroy()
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, sandbox.id))
	})

	it('a create POST answered 503 is sent once, never retried, and leaves no Sandbox', async () => {
		const refused = h.cluster.faults.api.respondWith({
			status: 503,
			count: Number.POSITIVE_INFINITY,
			match: { method: 'POST', pathIncludes: '/sandboxes' },
		})
		const { error } = await rejection(h.provider({ access: h.faultedConfig().access }).create())
		refused.clear()
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'api-unreachable', retryable: true })
		expect(refused.hits).toBe(1)
		expect(refused.requests).toEqual([`POST ${paths.sandboxes(h.namespace)}`])
		expect(await liveSandboxes()).toEqual([])
	})

	it('a caller abort during readiness still deletes the Sandbox the acquire created', async () => {
		// Readiness reads keep failing (retried), so the acquire is still polling when the caller aborts.
		h.cluster.faults.api.respondWith({
			status: 503,
			count: Number.POSITIVE_INFINITY,
			match: { method: 'GET', pathIncludes: '/sandboxes/' },
		})
		const caller = new AbortController()
		const reason = new Error('the caller gave up')
		const { error, name } = await duringAcquire(
			() => h.provider({ access: h.faultedConfig().access }).create({ signal: caller.signal }),
			async () => caller.abort(reason),
		)
		expect(error).toBe(reason)
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, name), { timeoutMs: 10_000 })
	})

	it('an unanswering API server fails a call with KubernetesApiTimeoutError at apiRequestTimeoutMs', async () => {
		const pause = h.cluster.faults.api.pause()
		try {
			const apiRequestTimeoutMs = 1_000
			const config = h.faultedConfig({ warmPoolName: 'any-pool', apiRequestTimeoutMs })
			const { error, elapsedMs } = await rejection(readKubernetesTaskCapacity(config))
			const timeout = findInChain(error, KubernetesApiTimeoutError)
			expect(timeout).toBeInstanceOf(KubernetesApiTimeoutError)
			expect(timeout).toMatchObject({ verb: 'GET', timeoutMs: apiRequestTimeoutMs })
			expect(elapsedMs).toBeGreaterThanOrEqual(apiRequestTimeoutMs - 50)
			expect(elapsedMs).toBeLessThan(apiRequestTimeoutMs * 5)
			expect(String((error as Error).message)).not.toContain(h.cluster.access.token)
		} finally {
			pause.resume()
		}
	})

	it('429 and 503 answers to readiness reads are retried inside the budget and Retry-After is honoured', async () => {
		// The watch of the Sandbox is the first readiness read; a throttled watch is polled after
		// its Retry-After.
		const match = { method: 'GET', pathIncludes: '/sandboxes' }
		const throttled = h.cluster.faults.api.respondWith({
			status: 429,
			count: 1,
			retryAfterSeconds: 1,
			match,
		})
		const unavailable = h.cluster.faults.api.respondWith({ status: 503, count: 2, match })
		const started = performance.now()
		const sandbox = await h.provider({ access: h.faultedConfig().access }).create()
		open.push(sandbox)
		expect(throttled.hits).toBe(1)
		expect(unavailable.hits).toBe(2)
		// The Retry-After second was waited out before the next read.
		expect(performance.now() - started).toBeGreaterThanOrEqual(1_000)
		expect(await sandbox.exec('true')).toMatchObject({ exitCode: 0 })
	})

	it('a pod that is never scheduled is diagnosed as capacity after the budget, and the Sandbox is deleted', async () => {
		const error = await failedAcquireUnder('unschedulable')
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'capacity', retryable: true })
	})

	it('a pod whose image cannot be pulled is diagnosed as image-pull after the budget, and the Sandbox is deleted', async () => {
		const error = await failedAcquireUnder('image-pull')
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'image-pull', retryable: false })
	})

	it('a guest running as root with capabilities is refused by the privilege probe and deleted', async () => {
		const { error } = await rejection(h.provider({ sandboxTemplateName: 'root-template' }).create())
		const refusal = findInChain(error, KubernetesPrivilegeProbeError)
		expect(refusal).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(refusal?.message).toMatch(/privileg|Cap/i)
		await waitFor('no Sandbox left', async () =>
			(await liveSandboxes()).length === 0 ? true : undefined,
		)
	})

	it("service mode against a Service name that does not resolve fails at once naming 'pod-ip'", async () => {
		const readyTimeoutMs = 30_000
		const { error, elapsedMs } = await rejection(
			h.provider({ agentAddress: 'service', readyTimeoutMs }).create(),
		)
		const unresolvable = findInChain(error, KubernetesAgentAddressUnresolvableError)
		expect(unresolvable).toBeInstanceOf(KubernetesAgentAddressUnresolvableError)
		expect(unresolvable?.message).toContain(`.${h.namespace}.svc.cluster.local`)
		expect(unresolvable?.message).toContain('pod-ip')
		// ENOTFOUND is not retried for the connect budget.
		expect(elapsedMs).toBeLessThan(readyTimeoutMs / 2)
		await waitFor('no Sandbox left', async () =>
			(await liveSandboxes()).length === 0 ? true : undefined,
		)
	})

	it('pod-ip mode follows a replaced pod to its new address and bind token', async () => {
		const sandbox = await h.provider().create()
		open.push(sandbox)
		const sandboxPath = paths.sandbox(h.namespace, sandbox.id)
		const first = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
		await sandbox.writeFile('marker', 'before')

		// Suspend (the pod goes), park a filler pod on the freed address, resume (a new pod at a new
		// address), then remove the filler so the old address answers nobody.
		await h.cluster.api.patch(sandboxPath, { spec: { operatingMode: 'Suspended' } }, 'merge')
		await waitGone(h.cluster.api, paths.pod(h.namespace, sandbox.id), { timeoutMs: 60_000 })
		await h.cluster.api.create(
			paths.sandboxes(h.namespace),
			directSandbox('filler', { workspace: false }),
		)
		const filler = await waitObject(
			h.cluster.api,
			paths.pod(h.namespace, 'filler'),
			'filler pod has an IP',
			(pod) => typeof pod.status?.podIP === 'string',
		)
		await h.cluster.api.patch(sandboxPath, { spec: { operatingMode: 'Running' } }, 'merge')
		await waitObject(h.cluster.api, sandboxPath, 'Sandbox Ready again', isReady, {
			timeoutMs: 60_000,
		})
		await h.cluster.api.remove(paths.sandbox(h.namespace, 'filler'))
		await waitGone(h.cluster.api, paths.pod(h.namespace, 'filler'), { timeoutMs: 60_000 })
		const second = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
		expect(second.metadata.uid).not.toBe(first.metadata.uid)
		expect(second.status?.podIP).not.toBe(first.status?.podIP)
		expect(filler.status?.podIP).toBe(first.status?.podIP)

		expect(await sandbox.exec('cat', ['/workspace/marker'])).toMatchObject({
			exitCode: 0,
			stdout: 'before',
		})
	})
})
