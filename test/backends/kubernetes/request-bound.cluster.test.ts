// The backend's per-request bound against the local cluster (pool-less task sandboxes): the
// configured `apiRequestTimeoutMs` is what ends an acquire against an API server that accepts and
// never answers; a joined teardown settles within the bound when the API server stops answering;
// and a DELETE that timed out but had been applied (answer withheld by a front that forwards it)
// counts as done — the retried destroy() finds the object gone and resolves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { kubernetesPaths } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import {
	KubernetesAcquireError,
	KubernetesApiTimeoutError,
	KubernetesSandboxDestroyedError,
} from '../../../src/index.js'
import { waitGone } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { findInChain, rejection } from './error-chain.js'
import { listSandboxes, templateName, useKubernetesHarness } from './kubernetes-harness.js'
import { startWithholdingApiFront, type WithholdingApiFront } from './withholding-api-front.js'

const BOUND_MS = 1000

const h = useKubernetesHarness({ namespacePrefix: 'k8s-bound' })
const open = h.open

let front: WithholdingApiFront

beforeAll(async () => {
	front = await startWithholdingApiFront(h.cluster.access)
})

afterAll(async () => {
	await front?.close()
})

describe('apiRequestTimeoutMs on the Kubernetes backend', () => {
	it('an unanswering API server fails an acquire with api-timeout at the configured bound', async () => {
		const before = (await listSandboxes(h.cluster, h.namespace)).length
		const provider = h.provider({
			access: h.faultedConfig().access,
			apiRequestTimeoutMs: BOUND_MS,
		})
		const pause = h.cluster.faults.api.pause()
		let outcome: { error: unknown; elapsedMs: number }
		try {
			outcome = await rejection(provider.create())
		} finally {
			pause.resume()
		}
		const { error, elapsedMs } = outcome
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'api-timeout', retryable: true })
		const timeout = findInChain(error, KubernetesApiTimeoutError)
		expect(timeout).toMatchObject({
			verb: 'GET',
			path: kubernetesPaths.template(h.namespace, templateName),
			timeoutMs: BOUND_MS,
		})
		expect(elapsedMs).toBeGreaterThanOrEqual(BOUND_MS - 50)
		expect(elapsedMs).toBeLessThan(5 * BOUND_MS)
		expect((error as Error).message).not.toContain(h.cluster.access.token)
		expect(await listSandboxes(h.cluster, h.namespace)).toHaveLength(before)
	})

	it('a joined destroy() settles within the bound when the API server stops answering', async () => {
		const sandbox = await h
			.provider({ access: h.faultedConfig().access, apiRequestTimeoutMs: BOUND_MS })
			.create()
		open.push(sandbox)
		const path = paths.sandbox(h.namespace, sandbox.id)
		const pause = h.cluster.faults.api.pause()
		let first: { error: unknown; elapsedMs: number }
		let joined: { error: unknown; elapsedMs: number }
		try {
			const teardown = sandbox.destroy()
			const joining = sandbox.destroy()
			expect(joining).toBe(teardown)
			;[first, joined] = await Promise.all([rejection(teardown), rejection(joining)])
		} finally {
			pause.resume()
		}
		for (const outcome of [first, joined]) {
			expect(findInChain(outcome.error, KubernetesApiTimeoutError)).toMatchObject({
				verb: 'DELETE',
				path,
				timeoutMs: BOUND_MS,
			})
			expect(outcome.elapsedMs).toBeLessThan(5 * BOUND_MS)
		}
		// The handle stays destroyed; a retried destroy() completes once the server answers.
		await expect(sandbox.exec('true')).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
		await sandbox.destroy()
		await waitGone(h.cluster.api, path)
	})

	it('a destroy() whose DELETE timed out but was applied resolves on retry: the object already gone counts as deleted', async () => {
		const sandbox = await h
			.provider({
				access: { server: front.server, getToken: async () => h.cluster.access.token },
				apiRequestTimeoutMs: BOUND_MS,
			})
			.create()
		open.push(sandbox)
		const path = paths.sandbox(h.namespace, sandbox.id)
		front.withhold({ method: 'DELETE', pathIncludes: `/sandboxes/${sandbox.id}` })
		const { error } = await rejection(sandbox.destroy())
		expect(findInChain(error, KubernetesApiTimeoutError)).toMatchObject({
			verb: 'DELETE',
			path,
			timeoutMs: BOUND_MS,
		})
		// The API server did apply it: the object goes away although the client never heard.
		await waitGone(h.cluster.api, path)
		expect(front.log.filter((entry) => entry.request === `DELETE ${path}`)).toEqual([
			{ request: `DELETE ${path}`, status: 200, answered: false },
		])
		await sandbox.destroy()
		expect(front.log.filter((entry) => entry.request === `DELETE ${path}`)).toEqual([
			{ request: `DELETE ${path}`, status: 200, answered: false },
			{ request: `DELETE ${path}`, status: 404, answered: true },
		])
		expect(sandbox.status).toBe('destroyed')
	})
})
