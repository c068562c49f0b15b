// `onExecTiming` against the real control plane: a warm claim's pod reached over the routed pod
// network through KubernetesAgentTransport, and each exec's four durations reported without the
// bind token (the pod uid), the command or its output.
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { RemoteExecutionTiming } from '../../../src/agent-entry.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { useKubernetesHarness } from './kubernetes-harness.js'

const harness = useKubernetesHarness({ poolReplicas: 1, namespacePrefix: 'timing' })

describe('exec timing on the harness', () => {
	it('reports dial, reserve, execute and drain for an exec in a warm pod, and nothing else', async () => {
		const timings: RemoteExecutionTiming[] = []
		const provider = harness.provider({ onExecTiming: (timing) => timings.push(timing) })
		const sandbox = await provider.create()
		try {
			const before = timings.length
			const marker = `m${randomUUID().slice(0, 8)}`
			const result = await sandbox.exec('sh', ['-c', `echo ${marker}`])
			expect(result).toMatchObject({ exitCode: 0, stdout: `${marker}\n` })
			expect(timings).toHaveLength(before + 1)
			const timing = timings.at(-1)
			expect(Object.keys(timing ?? {}).sort()).toEqual([
				'dialMs',
				'drainMs',
				'executeMs',
				'reserveMs',
			])
			for (const value of Object.values(timing ?? {})) {
				expect(Number.isFinite(value)).toBe(true)
				expect(value).toBeGreaterThanOrEqual(0)
			}
			const pod = await harness.cluster.api.get<{ metadata: { uid: string } }>(
				paths.pod(harness.namespace, sandbox.id),
			)
			const payload = JSON.stringify(timings)
			for (const secret of [pod.metadata.uid, marker, 'echo']) {
				expect(payload).not.toContain(secret)
			}
		} finally {
			await sandbox.destroy()
		}
	})
})
