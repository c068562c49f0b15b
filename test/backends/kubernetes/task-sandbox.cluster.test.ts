// The backend engineer's proof against the real control plane: a warm claim from a pool of one
// acquired through createSandboxProvider (pod-ip mode), a command run in the pod's agent as the
// deprivileged user, and destroy deleting the claim (the controller then cascades).
import { describe, expect, it } from 'vitest'
import type { SandboxLifecycleEvent } from '../../../src/contract/sandbox-events.js'
import { KubernetesSandboxDestroyedError, type Sandbox } from '../../../src/index.js'
import { waitGone } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { listClaims, poolName, useKubernetesHarness, waitPoolReady } from './kubernetes-harness.js'
import { startRecordingApiProxy } from './recording-api-proxy.js'

const harness = useKubernetesHarness({ poolReplicas: 1, namespacePrefix: 'task' })

/** Reads a sandbox's lifecycle stream to its end in the background. */
function readEvents(sandbox: Sandbox, options: { cursor?: string; replay?: boolean }) {
	const seen: SandboxLifecycleEvent[] = []
	const done = (async () => {
		for await (const event of sandbox.events?.(options) ?? []) seen.push(event)
	})()
	return { seen, done }
}

describe('Kubernetes task sandbox on the harness', () => {
	it('acquires a warm claim, execs in its pod, and destroy deletes the claim', async () => {
		const dialed: string[] = []
		const provider = harness.provider({ onDialAttempt: ({ host }) => dialed.push(host) })
		const sandbox = await provider.create()
		const claims = await listClaims(harness.cluster, harness.namespace)
		expect(claims).toHaveLength(1)
		const claim = claims[0]
		expect(claim?.status?.sandbox).toMatchObject({ name: sandbox.id })
		expect(claim?.spec).toMatchObject({ lifecycle: { shutdownPolicy: 'Delete' } })

		const pod = await harness.cluster.api.get<{ status: { podIP: string } }>(
			paths.pod(harness.namespace, sandbox.id),
		)
		await harness.cluster.kubelet?.assertPodRoute(pod.status.podIP)
		expect(new Set(dialed)).toEqual(new Set([pod.status.podIP]))

		const result = await sandbox.exec('sh', ['-c', 'echo hello; id -u'])
		expect(result.exitCode).toBe(0)
		expect(result.stdout.split('\n')[0]).toBe('hello')
		await sandbox.writeFile('note.txt', 'kept')
		expect((await sandbox.readFile('note.txt')).toString()).toBe('kept')

		await sandbox.destroy()
		await expect(sandbox.exec('true')).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
		await waitFor('claim deleted', async () =>
			(await listClaims(harness.cluster, harness.namespace)).length === 0 ? true : undefined,
		)
	})

	it('destroy() of a sandbox whose claim something else already deleted counts it released and resolves', async () => {
		await waitPoolReady(harness.cluster, harness.namespace, poolName, 1)
		const proxy = await startRecordingApiProxy(harness.cluster.access)
		try {
			const token = harness.cluster.access.token
			const sandbox = await harness
				.provider({ access: { server: proxy.server, getToken: async () => token } })
				.create()
			const claim = (await listClaims(harness.cluster, harness.namespace))[0]
			const path = paths.claim(harness.namespace, claim?.metadata.name ?? '')
			await harness.cluster.api.remove(path)
			await waitGone(harness.cluster.api, path)
			proxy.clear()
			// The real API server answers the DELETE 404; the handle treats that as released.
			await expect(sandbox.destroy()).resolves.toBeUndefined()
			expect(proxy.requests.map((line) => line.split('?')[0])).toEqual([`DELETE ${path}`])
			await expect(sandbox.destroy()).resolves.toBeUndefined()
			await expect(sandbox.exec('true')).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
		} finally {
			await proxy.close()
		}
	})

	it('events() tells an exec started and exited with its exit code, resumes after a cursor, and destroy() ends it with destroyed', async () => {
		await waitPoolReady(harness.cluster, harness.namespace, poolName, 1)
		const sandbox = await harness.provider().create()
		// Nothing came before (the privilege probe ran on a throwaway handle), so replay is all of it.
		const live = readEvents(sandbox, { replay: true })
		expect((await sandbox.exec('sh', ['-c', 'exit 7'])).exitCode).toBe(7)
		expect((await sandbox.exec('true')).exitCode).toBe(0)
		await waitFor('both execs told', async () => (live.seen.length === 4 ? true : undefined))
		expect(live.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'exec-started',
			'exec-exited',
		])
		expect(live.seen[0]).toMatchObject({ execId: 1, command: 'sh', args: ['-c', 'exit 7'] })
		expect(live.seen[1]).toMatchObject({ execId: 1, exitCode: 7 })
		expect(live.seen[3]).toMatchObject({ execId: 2, exitCode: 0 })

		// A reader resuming after the first exec's exit sees only what followed it.
		const resumed = readEvents(sandbox, { cursor: live.seen[1]?.cursor ?? '' })
		await sandbox.destroy()
		await Promise.all([live.done, resumed.done])
		expect(live.seen.at(-1)?.type).toBe('destroyed')
		expect(resumed.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'destroyed',
		])
		expect(resumed.seen[1]).toMatchObject({ execId: 2, exitCode: 0 })
		await waitFor('claim deleted', async () =>
			(await listClaims(harness.cluster, harness.namespace)).length === 0 ? true : undefined,
		)
	})

	it('a claim deleted under the handle ends events() with guest-died once the lease finds it gone', async () => {
		await waitPoolReady(harness.cluster, harness.namespace, poolName, 1)
		// A 10 s lease renews every ~5 s: the renewal after the delete finds it gone.
		const sandbox = await harness.provider({ claimTtlSeconds: 10 }).create()
		const reading = readEvents(sandbox, {})
		const claim = (await listClaims(harness.cluster, harness.namespace))[0]
		await harness.cluster.api.remove(paths.claim(harness.namespace, claim?.metadata.name ?? ''))
		await reading.done
		expect(reading.seen.map((event) => event.type)).toEqual(['guest-died'])
		expect(reading.seen[0]).toMatchObject({ exitCode: null, signal: null })
		expect(sandbox.status).toBe('destroyed')
		await expect(sandbox.destroy()).resolves.toBeUndefined()
	})
})
