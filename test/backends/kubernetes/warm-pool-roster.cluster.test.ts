// The warm pool probed before any claim, against the real controller and the process kubelet: a
// provider lists its pool's pods at each create and runs the privilege probe once in each ready
// one, so a later create handed such a pod runs no probe of its own (its pod uid, the bind token,
// passed) — and a pool of guests running as root with capabilities is still refused at every
// create, its claims deleted, however often the roster has met its pods.
import { beforeAll, describe, expect, it } from 'vitest'
import { KubernetesPrivilegeProbeError, type Sandbox } from '../../../src/index.js'
import type { KubeObject } from '../../cluster/cluster-objects.js'
import { paths, warmPool } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { findInChain, rejection } from './error-chain.js'
import {
	listClaims,
	poolName,
	privilegedTemplate,
	useKubernetesHarness,
	waitPoolReady,
} from './kubernetes-harness.js'

const replicas = 3
const rootPool = 'root-pool'
const rootReplicas = 2
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-roster',
	refillPoolAfterEach: true,
})
const open = h.open

beforeAll(async () => {
	await h.cluster.api.create(paths.templates(h.namespace), privilegedTemplate('root-template'))
	await h.cluster.api.create(
		paths.pools(h.namespace),
		warmPool(rootPool, 'root-template', rootReplicas),
	)
	await waitPoolReady(h.cluster, h.namespace, rootPool, rootReplicas)
})

const liveClaims = async (): Promise<readonly KubeObject[]> =>
	(await listClaims(h.cluster, h.namespace)).filter(
		(claim) => claim.metadata.deletionTimestamp === undefined,
	)

describe('a warm pool probed before any claim', () => {
	it('a create handed a pod the provider probed before the claim runs no probe of its own, and the pod it hands out is deprivileged', async () => {
		let execsInCreate = 0
		const provider = h.provider({
			// Hears the acquire's own probe (the pre-claim probes report to no caller hook).
			onExecTiming: () => {
				execsInCreate += 1
			},
		})
		let proven: Sandbox | undefined
		// The first create lists the pool and probes its ready pods; a later one is handed one of them
		// (the controller picks the pod, so a few rounds may bind a pod the roster has not proven yet).
		for (let round = 0; round < 8 && proven === undefined; round += 1) {
			execsInCreate = 0
			const sandbox = await provider.create()
			open.push(sandbox)
			if (execsInCreate === 0) {
				proven = sandbox
				break
			}
			await sandbox.destroy()
			await waitPoolReady(h.cluster, h.namespace, poolName, replicas)
		}
		expect(proven, 'no create was handed a pod probed before its claim').toBeDefined()
		const result = await (proven as Sandbox).exec('sh', [
			'-c',
			'id -u; grep -E "^(CapInh|CapPrm|CapEff|CapBnd|NoNewPrivs):" /proc/self/status',
		])
		expect(result.exitCode).toBe(0)
		expect(result.stdout).toMatch(
			/^1000\nCapInh:\s+0+\nCapPrm:\s+0+\nCapEff:\s+0+\nCapBnd:\s+0+\nNoNewPrivs:\s+1\n$/,
		)
	})

	it('a pool of guests running as root with capabilities is refused by the privilege probe at every create, however often the roster met its pods, and each claim is deleted', async () => {
		const provider = h.provider({ sandboxTemplateName: 'root-template', warmPoolName: rootPool })
		for (let round = 0; round < 3; round += 1) {
			const { error } = await rejection(provider.create())
			const refusal = findInChain(error, KubernetesPrivilegeProbeError)
			expect(refusal, `round ${round}`).toBeInstanceOf(KubernetesPrivilegeProbeError)
			expect(refusal?.message).toMatch(/privileg|Cap/i)
			await waitFor('the refused claim deleted', async () =>
				(await liveClaims()).length === 0 ? true : undefined,
			)
			await waitPoolReady(h.cluster, h.namespace, rootPool, rootReplicas)
		}
	})
})
