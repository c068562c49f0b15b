// events() on a Kubernetes task sandbox, through the real handle createKubernetesTaskSandbox
// returns: a REAL deprivileged agent answers the probe and the execs, the scripted API port answers
// the cluster side (the claim, its pod, the lease's PATCH and the DELETE). The same stream against
// the cluster harness is in task-sandbox-events.cluster.test.ts.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import type { SandboxLifecycleEvent } from '../../../src/contract/sandbox-events.js'
import { KubernetesSandboxGoneError } from '../../../src/index.js'
import { startGuestAgent } from './deprivileged-agent.js'
import { rejectionError } from './error-chain.js'
import { podIpGuestConfig } from './local-guest-config.js'
import { pod, readyClaim, scriptedApi, statusError } from './scripted-api-port.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()))
})

/** A task sandbox over a real agent; `patch` answers the lease's renewals (TTL 2 s: ~1 s apart). */
async function taskSandbox(patch: () => unknown = () => ({})): Promise<KubernetesTaskSandbox> {
	const token = randomUUID()
	const agent = await startGuestAgent({ token })
	cleanups.push(() => agent.stop())
	const api = scriptedApi((call) => {
		if (call.verb === 'POST') return call.body
		if (call.verb === 'DELETE') return {}
		if (call.verb === 'PATCH') return patch()
		if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-events')
		return pod(token, '127.0.0.1')
	})
	const config = podIpGuestConfig(agent.port, { claimTtlSeconds: 2 })
	const sandbox = await createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace })
	if (!(sandbox instanceof KubernetesTaskSandbox)) throw new Error('not a KubernetesTaskSandbox')
	cleanups.unshift(() => sandbox.destroy())
	return sandbox
}

/** Reads a stream to its end in the background. */
function collect(events: AsyncIterable<SandboxLifecycleEvent>) {
	const seen: SandboxLifecycleEvent[] = []
	const done = (async () => {
		for await (const event of events) seen.push(event)
	})()
	return { seen, done }
}

describe('events() on a Kubernetes task sandbox over a real agent', () => {
	it('replays the caller’s own execs only (the privilege probe ran on a throwaway handle), then ends with destroyed', async () => {
		const sandbox = await taskSandbox()
		expect((await sandbox.exec('sh', ['-c', 'exit 4'])).exitCode).toBe(4)
		const reading = collect(sandbox.events({ replay: true }))
		await sandbox.destroy()
		await reading.done
		expect(reading.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'destroyed',
		])
		expect(reading.seen[0]).toMatchObject({ execId: 1, command: 'sh', args: ['-c', 'exit 4'] })
		expect(reading.seen[1]).toMatchObject({ execId: 1, exitCode: 4 })
		// Ended, it can still be read back by cursor.
		const after = collect(sandbox.events({ cursor: reading.seen[0]?.cursor ?? '' }))
		await after.done
		expect(after.seen.map((event) => event.type)).toEqual(['exec-exited', 'destroyed'])
	})

	it('ends with guest-died (exit and signal unknown) once the lease finds the claim deleted', async () => {
		let gone = false
		const sandbox = await taskSandbox(() => {
			if (gone) throw statusError('PATCH', 'claim', 404)
			return {}
		})
		await sandbox.exec('true')
		const reading = collect(sandbox.events({ replay: true }))
		gone = true
		await reading.done
		expect(sandbox.gone).toBe(true)
		expect(reading.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'guest-died',
		])
		expect(reading.seen[2]).toMatchObject({ exitCode: null, signal: null })
		expect(await rejectionError(sandbox.exec('true'))).toBeInstanceOf(KubernetesSandboxGoneError)
		// A destroy after that still deletes the claim, and adds nothing to the ended stream.
		await sandbox.destroy()
		const after = collect(sandbox.events({ replay: true }))
		await after.done
		expect(after.seen.map((event) => event.type)).toEqual([
			'exec-started',
			'exec-exited',
			'guest-died',
		])
	})
})
