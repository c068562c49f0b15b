// The shared Sandbox contract suite against the Kubernetes task backend on the local cluster
// harness: warm claims from a pool, the guest dialed at its pod IP (there is no cluster DNS here),
// the stock agent over token-authenticated TCP in each pod. walkFiles runs (walkFilesViaExec).
import { beforeAll, describe, expect, it } from 'vitest'
import { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import type { SandboxProvider } from '../../../src/index.js'
import { defineSandboxConformance } from '../../../src/testing/index.js'
import { useKubernetesHarness } from './kubernetes-harness.js'

const h = useKubernetesHarness({ poolReplicas: 4, namespacePrefix: 'k8s-conf' })

let provider: SandboxProvider | undefined

beforeAll(() => {
	provider = h.provider({ agentAddress: 'pod-ip' })
})

describe('Kubernetes task backend (pod-ip, warm pool of 4)', () => {
	defineSandboxConformance(
		{ describe, it, expect },
		async () => {
			if (!provider) throw new Error('provider not created')
			return { sandbox: await provider.create() }
		},
		{
			label: 'kubernetes task sandboxes, pod-ip',
			supportsRangedAndStreamedReads: true,
			// Every optional member, walkFiles included, is on the class: no case may skip.
			sandboxShape: KubernetesTaskSandbox.prototype,
			capabilities: {
				killsDetachedDescendants: {
					supported: false,
					reason:
						'the pod gives its agent no delegated cgroup, so a setsid descendant of an aborted command lives until the pod is deleted',
				},
			},
			timeoutMs: 60_000,
		},
	)
})
