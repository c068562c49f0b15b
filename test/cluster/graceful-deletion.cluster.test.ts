// Graceful pod deletion on the local cluster: a pod whose agent traps SIGTERM (its shutdown drain
// is held open by a long flush command) keeps running through terminationGracePeriodSeconds and is
// then killed and removed — long before its own drain would have ended; a plain agent exits on
// SIGTERM and its pod goes without waiting out a long grace period.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestNamespace, type KubeObject, waitGone, waitObject } from './cluster-objects.js'
import { type ClusterUnderTest, clusterUnderTest } from './external-cluster.js'
import { agentPodSpec, paths } from './sandbox-fixtures.js'

let cluster: ClusterUnderTest
let ns: string

beforeAll(async () => {
	cluster = await clusterUnderTest()
	ns = await createTestNamespace(cluster.api, 'grace')
})

afterAll(async () => {
	if (cluster === undefined) return
	if (ns !== undefined) await cluster.api.remove(paths.namespace(ns)).catch(() => {})
	await cluster.stop()
})

/** The agent's SIGTERM drain waits for this flush command: ten minutes unless killed. */
const trapsSigterm = {
	NAMZU_AGENT_FLUSH_COMMAND: 'sleep 600',
	NAMZU_AGENT_FLUSH_TIMEOUT_MS: '600000',
	NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '600000',
}

async function runningPod(
	name: string,
	env: Record<string, string>,
	graceSeconds: number,
): Promise<KubeObject> {
	await cluster.api.create(paths.pods(ns), {
		apiVersion: 'v1',
		kind: 'Pod',
		metadata: { name },
		spec: agentPodSpec({ env, terminationGracePeriodSeconds: graceSeconds, workspace: false }),
	})
	return waitObject(
		cluster.api,
		paths.pod(ns, name),
		`pod ${name} Running and Ready`,
		(pod) =>
			pod.status?.phase === 'Running' &&
			pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
		{ timeoutMs: 60_000 },
	)
}

function containerRunning(pod: KubeObject | undefined): boolean {
	const statuses = pod?.status?.containerStatuses
	if (!Array.isArray(statuses)) return false
	return statuses.some(
		(status: unknown) =>
			typeof status === 'object' &&
			status !== null &&
			'state' in status &&
			typeof status.state === 'object' &&
			status.state !== null &&
			'running' in status.state,
	)
}

describe('graceful pod deletion by the process kubelet', () => {
	it('gives a pod whose agent traps SIGTERM its grace period, then kills it', async () => {
		const graceSeconds = 4
		await runningPod('traps-sigterm', trapsSigterm, graceSeconds)
		const deletedAt = Date.now()
		await cluster.api.remove(paths.pod(ns, 'traps-sigterm'))

		// Halfway through the grace period the pod is terminating but its container still runs.
		await new Promise((resolve) => setTimeout(resolve, (graceSeconds * 1000) / 2))
		const midway = await cluster.api.find<KubeObject>(paths.pod(ns, 'traps-sigterm'))
		expect(midway?.metadata.deletionTimestamp).toBeDefined()
		expect(midway?.metadata.deletionGracePeriodSeconds).toBe(graceSeconds)
		expect(containerRunning(midway)).toBe(true)

		// Then SIGKILL and the final delete: well before the agent's own ten-minute drain.
		await waitGone(cluster.api, paths.pod(ns, 'traps-sigterm'), { timeoutMs: 60_000 })
		expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(graceSeconds * 1000)
	})

	it('removes a pod whose agent exits on SIGTERM without waiting out its grace period', async () => {
		await runningPod('exits-on-sigterm', {}, 120)
		await cluster.api.remove(paths.pod(ns, 'exits-on-sigterm'))
		await waitGone(cluster.api, paths.pod(ns, 'exits-on-sigterm'), { timeoutMs: 60_000 })
	})
})
