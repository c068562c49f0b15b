/**
 * The shipped manifests (deploy/k8s/manifests/) against a real API server with the real
 * agent-sandbox controller: every object applies as written (only the namespace, the warm pool's
 * size and the ingress rule's `from` edited, as an operator does), and the backend runs under
 * exactly the shipped Roles — a direct task sandbox from the shipped template with deny-all egress
 * verified against the shipped policy under rbac.yaml, and a pooled one under rbac-claimant.yaml,
 * which may not create a Sandbox.
 */
import { describe, expect, it } from 'vitest'
import {
	createKubernetesSandboxProvider,
	DEFAULT_KUBERNETES_AGENT_PORT,
	type KubernetesBackendConfig,
} from '../../../src/index.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { manifestObjects } from '../../deploy/manifest-files.js'
import { backendAccess, useKubernetesHarness } from './kubernetes-harness.js'
import { accessAllowed, serviceAccountToken } from './service-account.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-manifests', withoutIngressPolicy: true })

// biome-ignore lint/suspicious/noExplicitAny: editing parsed YAML as an operator would
type Any = any

const FILES = [
	'runtimeclass.yaml',
	'rbac.yaml',
	'rbac-claimant.yaml',
	'networkpolicy.yaml',
	'sandboxtemplate-task.yaml',
	'sandboxtemplate-workspace.yaml',
	'sandboxwarmpool.yaml',
]

function collection(object: Any, ns: string): string {
	switch (object.kind) {
		case 'RuntimeClass':
			return '/apis/node.k8s.io/v1/runtimeclasses'
		case 'ServiceAccount':
			return paths.serviceAccounts(ns)
		case 'Role':
			return paths.roles(ns)
		case 'RoleBinding':
			return paths.roleBindings(ns)
		case 'NetworkPolicy':
			return paths.networkPolicies(ns)
		case 'SandboxTemplate':
			return paths.templates(ns)
		case 'SandboxWarmPool':
			return paths.pools(ns)
		default:
			throw new Error(`no collection for ${object.kind}`)
	}
}

/** The operator's edits: the namespace, one warm sandbox, the host's own address on the agent port. */
function edited(object: Any, ns: string, hostCidr: string): Any {
	const copy = structuredClone(object)
	if (copy.metadata.namespace !== undefined) copy.metadata.namespace = ns
	for (const subject of copy.subjects ?? []) subject.namespace = ns
	if (copy.kind === 'SandboxWarmPool') copy.spec.replicas = 1
	if (copy.kind === 'NetworkPolicy' && copy.spec.ingress) {
		for (const rule of copy.spec.ingress) rule.from = [{ ipBlock: { cidr: hostCidr } }]
	}
	return copy
}

function tokenFor(account: string): Promise<string> {
	return serviceAccountToken(h.cluster.api, h.namespace, account)
}

/** The harness config acting as `token`, on the shipped task template and its agent port. */
function configAs(
	token: string,
	overrides: Partial<KubernetesBackendConfig>,
): KubernetesBackendConfig {
	return h.config({
		access: backendAccess({ ...h.cluster.access, token }),
		sandboxTemplateName: 'namzu-sandbox-task',
		agentPort: DEFAULT_KUBERNETES_AGENT_PORT,
		readyTimeoutMs: 60_000,
		...overrides,
	})
}

describe('the shipped manifests on a real API server', () => {
	it('every manifest applies as written, and reads back', async () => {
		const hostCidr = `${h.cluster.kubelet.network.gateway}/32`
		for (const file of FILES) {
			for (const object of manifestObjects(file)) {
				const body = edited(object, h.namespace, hostCidr)
				await h.cluster.api.create(collection(body, h.namespace), body)
				const back = await h.cluster.api.find(
					`${collection(body, h.namespace)}/${body.metadata.name}`,
				)
				expect(back, `${file} ${body.kind} ${body.metadata.name}`).toBeDefined()
			}
		}
	})

	it("runs a direct task sandbox from the shipped template under rbac.yaml's Role, deny-all egress verified against networkpolicy.yaml", async () => {
		const provider = createKubernetesSandboxProvider(
			configAs(await tokenFor('namzu-sandbox'), { egress: { policy: { kind: 'deny-all' } } }),
		)
		try {
			const sandbox = await provider.create()
			try {
				const result = await sandbox.exec('sh', [
					'-c',
					'id -u; echo "$NAMZU_AGENT_SHUTDOWN_DEADLINE_MS"',
				])
				expect(result).toMatchObject({ exitCode: 0, stdout: '1001\n\n' })
			} finally {
				await sandbox.destroy()
			}
		} finally {
			await provider.close()
		}
	})

	it("claims from the shipped warm pool under rbac-claimant.yaml's Role, which may not create a Sandbox", async () => {
		await waitFor(
			'the shipped warm pool to be ready',
			async () => {
				const pool = await h.cluster.api.find<Any>(
					paths.pool(h.namespace, 'namzu-sandbox-task-pool'),
				)
				return pool?.status?.readyReplicas === 1 ? true : undefined
			},
			{ timeoutMs: 90_000, intervalMs: 250 },
		)
		const token = await tokenFor('namzu-sandbox-claimant')
		expect(
			await accessAllowed(h.cluster.access, token, h.namespace, {
				group: 'agents.x-k8s.io',
				resource: 'sandboxes',
				verb: 'create',
			}),
		).toBe(false)
		const provider = createKubernetesSandboxProvider(
			configAs(token, { warmPoolName: 'namzu-sandbox-task-pool' }),
		)
		try {
			const sandbox = await provider.create()
			try {
				expect((await sandbox.exec('id', ['-u'])).stdout).toBe('1001\n')
			} finally {
				await sandbox.destroy()
			}
		} finally {
			await provider.close()
		}
	})
})
