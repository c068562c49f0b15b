// What the Kubernetes backend's cluster tests share: one local cluster per file with a namespace,
// an agent SandboxTemplate (and optionally a warm pool filled and Ready), the backend config
// pointing at it (direct or through the fault proxy), the hooks every suite registers
// (`useKubernetesHarness`), and small waits on what the controller and the process kubelet write.
// The config shape is the documented `KubernetesBackendConfig`.
import { afterAll, afterEach, beforeAll } from 'vitest'
import {
	createSandboxProvider,
	type KubernetesBackendConfig,
	type Sandbox,
	type SandboxProvider,
} from '../../../src/index.js'
import type { ClusterAccess } from '../../cluster/cluster-access.js'
import {
	createTestNamespace,
	type KubeObject,
	listItems,
	waitObject,
} from '../../cluster/cluster-objects.js'
import {
	agentIngressPolicy,
	agentPort,
	paths,
	sandboxTemplate,
	warmPool,
} from '../../cluster/sandbox-fixtures.js'
import { startTestCluster, type TestCluster } from '../../cluster/test-cluster.js'

export const templateName = 'agent-template'
export const poolName = 'agent-pool'

/** `{ server, ca?, getToken }` for the backend from the harness's `{ server, token, caPem }`. */
export function backendAccess(access: ClusterAccess): KubernetesBackendConfig['access'] {
	const token = access.token
	return {
		server: access.server,
		...(access.caPem === undefined ? {} : { ca: access.caPem }),
		getToken: async () => token,
	}
}

/**
 * The flags a command-line user passes to reach this harness's template (`namzu-sandbox mcp
 * --tier kubernetes`, the deploy/k8s scripts): its kubeconfig, namespace, template, pod-ip, port.
 */
export function harnessCliFlags(
	harness: { readonly cluster: TestCluster; readonly namespace: string },
	kubeconfig = harness.cluster.kubeconfigPath,
): string[] {
	return [
		'--kubeconfig',
		kubeconfig,
		'--namespace',
		harness.namespace,
		'--template',
		templateName,
		'--agent-address',
		'pod-ip',
		'--agent-port',
		String(agentPort),
	]
}

export interface KubernetesHarness {
	readonly cluster: TestCluster
	readonly namespace: string
	/** A backend config for this namespace and template, direct to the API server, pod-ip mode. */
	config(overrides?: Partial<KubernetesBackendConfig>): KubernetesBackendConfig
	/** The same, through the API fault proxy (`cluster.faults.api`). */
	faultedConfig(overrides?: Partial<KubernetesBackendConfig>): KubernetesBackendConfig
	provider(overrides?: Partial<KubernetesBackendConfig>): SandboxProvider
	stop(): Promise<void>
}

export interface HarnessOptions {
	/** Warm pool replicas; no pool when 0 / omitted. */
	readonly poolReplicas?: number
	/** Extra env for the agent container (e.g. shortened grace periods). */
	readonly agentEnv?: Readonly<Record<string, string>>
	readonly namespacePrefix?: string
	/** Leave the namespace without the agent-port ingress policy (the ingress check's own suite). */
	readonly withoutIngressPolicy?: boolean
}

/** The name of the agent-port ingress policy every harness namespace gets by default. */
export const ingressPolicyName = 'namzu-sandbox-ingress'

export async function startKubernetesHarness(
	options: HarnessOptions = {},
): Promise<KubernetesHarness> {
	const cluster = await startTestCluster()
	const providers: SandboxProvider[] = []
	try {
		const namespace = await createTestNamespace(cluster.api, options.namespacePrefix ?? 'k8s')
		await cluster.api.create(
			paths.templates(namespace),
			sandboxTemplate(templateName, { env: options.agentEnv }),
		)
		if (!options.withoutIngressPolicy) {
			// A deployment applies it (the backend refuses an agent port no policy closes).
			await cluster.api.create(
				paths.networkPolicies(namespace),
				agentIngressPolicy(ingressPolicyName, undefined, `${cluster.kubelet.network.gateway}/32`),
			)
		}
		const replicas = options.poolReplicas ?? 0
		if (replicas > 0) {
			await cluster.api.create(paths.pools(namespace), warmPool(poolName, templateName, replicas))
			await waitPoolReady(cluster, namespace, poolName, replicas)
		}
		const base = (access: ClusterAccess): KubernetesBackendConfig => ({
			tier: 'microvm',
			service: 'kubernetes',
			namespace,
			access: backendAccess(access),
			sandboxTemplateName: templateName,
			...(replicas > 0 ? { warmPoolName: poolName } : {}),
			agentPort,
			agentAddress: 'pod-ip',
			readyTimeoutMs: 30_000,
		})
		return {
			cluster,
			namespace,
			config: (overrides = {}) => ({ ...base(cluster.access), ...overrides }),
			faultedConfig: (overrides = {}) => ({ ...base(cluster.faults.api.access), ...overrides }),
			provider(overrides = {}) {
				const provider = createSandboxProvider({
					backend: { ...base(cluster.access), ...overrides },
				})
				providers.push(provider)
				return provider
			},
			async stop() {
				await Promise.allSettled(providers.map((provider) => provider.close()))
				await cluster.api.remove(paths.namespace(namespace)).catch(() => {})
				await cluster.stop()
			},
		}
	} catch (error) {
		await cluster.stop()
		throw error
	}
}

export interface KubernetesHarnessHookOptions extends HarnessOptions {
	/** After each test, wait until the warm pool is full again (suites that count claims or pods). */
	readonly refillPoolAfterEach?: boolean
}

/** The file's harness, readable inside tests and hooks once the `beforeAll` has run. */
export interface UsedKubernetesHarness extends Omit<KubernetesHarness, 'stop'> {
	/** Sandboxes a test opened: destroyed after each test. */
	readonly open: Sandbox[]
}

/**
 * The hooks every Kubernetes cluster suite shares: the harness started once per file and stopped
 * after it; after each test the API fault proxy reset, the sandboxes in `open` destroyed and, with
 * `refillPoolAfterEach`, the warm pool awaited full again. Register file-specific hooks after this
 * call: they run after its `beforeAll` and (hooks run as a stack) before its `afterAll`.
 */
export function useKubernetesHarness(
	options: KubernetesHarnessHookOptions = {},
): UsedKubernetesHarness {
	let started: KubernetesHarness | undefined
	const open: Sandbox[] = []
	const current = (): KubernetesHarness => {
		if (!started)
			throw new Error('the Kubernetes harness is not started: read it in a test or hook')
		return started
	}
	beforeAll(async () => {
		started = await startKubernetesHarness(options)
	})
	afterEach(async () => {
		started?.cluster.faults.api.reset()
		await Promise.allSettled(open.splice(0).map((sandbox) => sandbox.destroy()))
		if (started && options.refillPoolAfterEach) {
			await waitPoolReady(started.cluster, started.namespace, poolName, options.poolReplicas ?? 0)
		}
	})
	afterAll(async () => {
		await started?.stop()
	})
	return {
		open,
		get cluster() {
			return current().cluster
		},
		get namespace() {
			return current().namespace
		},
		config: (overrides) => current().config(overrides),
		faultedConfig: (overrides) => current().faultedConfig(overrides),
		provider: (overrides) => current().provider(overrides),
	}
}

export function waitPoolReady(
	cluster: TestCluster,
	namespace: string,
	pool: string,
	replicas: number,
	timeoutMs = 120_000,
): Promise<KubeObject> {
	return waitObject(
		cluster.api,
		paths.pool(namespace, pool),
		`warm pool ${pool} readyReplicas == ${replicas}`,
		(object) => object.status?.readyReplicas === replicas,
		{ timeoutMs },
	)
}

export function listClaims(
	cluster: TestCluster,
	namespace: string,
): Promise<readonly KubeObject[]> {
	return listItems(cluster.api, paths.claims(namespace))
}

export function listSandboxes(
	cluster: TestCluster,
	namespace: string,
): Promise<readonly KubeObject[]> {
	return listItems(cluster.api, paths.sandboxes(namespace))
}

/** A template whose agent runs as root with extra capabilities: a guest that is not deprivileged. */
export function privilegedTemplate(name: string): Record<string, unknown> {
	const template = sandboxTemplate(name, { workspace: false })
	const spec = template.spec as { podTemplate: { spec: { containers: Record<string, unknown>[] } } }
	for (const container of spec.podTemplate.spec.containers) {
		container.securityContext = {
			runAsUser: 0,
			runAsGroup: 0,
			runAsNonRoot: false,
			allowPrivilegeEscalation: true,
			capabilities: { add: ['NET_ADMIN', 'SYS_ADMIN'] },
		}
	}
	return template
}

export const sleep = (ms: number): Promise<void> =>
	new Promise((resolve) => setTimeout(resolve, ms))
