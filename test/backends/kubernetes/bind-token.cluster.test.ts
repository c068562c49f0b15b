// The bind token is per instance: each pod's agent is bound to that pod's own metadata.uid (the
// downward API), so a workload that reads its own agent's token out of /proc/1/environ — which it
// can, sharing the agent's uid — holds a value that opens no other sandbox of the same pool.
import { describe, expect, it } from 'vitest'
import type { Sandbox } from '../../../src/index.js'
import type { KubeObject } from '../../cluster/cluster-objects.js'
import { execInPod } from '../../cluster/pod-agent.js'
import { agentPort, paths } from '../../cluster/sandbox-fixtures.js'
import { useKubernetesHarness } from './kubernetes-harness.js'

const replicas = 2
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-token',
	refillPoolAfterEach: true,
})
const open = h.open

/** What a workload in the sandbox can read of its own agent's environment. */
async function tokenSeenByWorkload(sandbox: Sandbox): Promise<string> {
	const result = await sandbox.exec('sh', [
		'-c',
		'tr "\\0" "\\n" < /proc/1/environ | sed -n "s/^NAMZU_AGENT_BIND_TOKEN=//p"',
	])
	expect(result.exitCode).toBe(0)
	return result.stdout.trim()
}

async function podOf(sandbox: Sandbox): Promise<{ uid: string; ip: string }> {
	const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
	const uid = pod.metadata.uid
	const ip = (pod.status as { podIP?: unknown } | undefined)?.podIP
	if (typeof uid !== 'string' || typeof ip !== 'string') throw new Error('pod without uid or IP')
	return { uid, ip }
}

async function outcome(promise: Promise<{ stdout: string }>): Promise<string> {
	try {
		return `ok: ${(await promise).stdout}`
	} catch (error) {
		return `refused: ${error instanceof Error ? error.message : String(error)}`
	}
}

describe('the per-instance bind token', () => {
	it('is each pod’s own metadata.uid: two sandboxes of one pool hold different tokens, and one’s token opens only its own agent', async () => {
		const provider = h.provider()
		const a = await provider.create()
		const b = await provider.create()
		open.push(a, b)
		const podA = await podOf(a)
		const podB = await podOf(b)
		const tokenA = await tokenSeenByWorkload(a)
		const tokenB = await tokenSeenByWorkload(b)
		expect(tokenA).toBe(podA.uid)
		expect(tokenB).toBe(podB.uid)
		expect(tokenA).not.toBe(tokenB)

		const assertRouted = (address: string) => h.cluster.kubelet.assertPodRoute(address)
		const dial = (ip: string, token: string) =>
			outcome(execInPod({ address: ip, port: agentPort, token }, 'echo opened', { assertRouted }))
		// What A's workload read buys it against B: nothing.
		expect(await dial(podB.ip, tokenA)).toMatch(/^refused: .*unauthorized/)
		expect(await dial(podA.ip, tokenB)).toMatch(/^refused: .*unauthorized/)
		// Positive control: each token opens its own instance.
		expect(await dial(podB.ip, tokenB)).toBe('ok: opened\n')
		expect(await dial(podA.ip, tokenA)).toBe('ok: opened\n')
		// And the backend's own handles keep working.
		expect(await a.exec('true')).toMatchObject({ exitCode: 0 })
		expect(await b.exec('true')).toMatchObject({ exitCode: 0 })
	})
})
