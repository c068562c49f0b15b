// The same cluster tests against a real cluster instead of the local one: with
// NAMZU_TEST_KUBECONFIG=<path> (a bearer-token kubeconfig whose user may create namespaces and
// agent-sandbox objects), `clusterUnderTest()` connects there. No kubelet and no faults exist on
// that path, so tests skip what needs them. The kubeconfig is read through `kubectl config view
// --raw --minify -o json` (the cached kubectl, else the one on PATH), so any YAML layout works.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { ClusterAccess } from './cluster-access.js'
import { KubeApi } from './kube-api.js'
import { accessFromKubeconfigJson } from './kubeconfig.js'
import { binDir, isRecord } from './paths.js'
import {
	type ClusterVersions,
	startTestCluster,
	type TestCluster,
	type TestClusterOptions,
} from './test-cluster.js'

export interface ExternalCluster {
	readonly external: true
	readonly access: ClusterAccess
	readonly kubeconfigPath: string
	readonly kubelet: undefined
	readonly faults: undefined
	readonly versions: ClusterVersions
	readonly api: KubeApi
	stop(): Promise<void>
}

export type ClusterUnderTest = TestCluster | ExternalCluster

function kubectlPath(): string {
	const cached = join(binDir(), 'kubectl')
	return existsSync(cached) ? cached : 'kubectl'
}

export async function connectExternalCluster(
	kubeconfigPath: string,
	signal?: AbortSignal,
): Promise<ExternalCluster> {
	const result = spawnSync(
		kubectlPath(),
		[
			'config',
			'view',
			'--raw',
			'--minify',
			'--flatten',
			'-o',
			'json',
			`--kubeconfig=${kubeconfigPath}`,
		],
		{ encoding: 'utf8' },
	)
	if (result.status !== 0) {
		throw new Error(`kubectl config view failed for ${kubeconfigPath}: ${result.stderr}`)
	}
	const access = accessFromKubeconfigJson(JSON.parse(result.stdout))
	const api = new KubeApi(access)
	const reported = await api.get<{ gitVersion?: string }>('/version', signal)
	return {
		external: true,
		access,
		kubeconfigPath,
		kubelet: undefined,
		faults: undefined,
		versions: {
			kubernetes: reported.gitVersion ?? 'unknown',
			agentSandbox: await controllerVersion(api, signal),
		},
		api,
		stop: async () => {},
	}
}

/** The tag of the controller Deployment's image (upstream manifests' names), else env or unknown. */
async function controllerVersion(api: KubeApi, signal?: AbortSignal): Promise<string> {
	const fromEnv = process.env.NAMZU_TEST_AGENT_SANDBOX_VERSION
	if (fromEnv) return fromEnv
	const deployment = await api
		.find<unknown>(
			'/apis/apps/v1/namespaces/agent-sandbox-system/deployments/agent-sandbox-controller',
			signal,
		)
		.catch(() => undefined)
	const image = findImage(deployment)
	const tag = image?.split(':').pop()
	return tag && tag !== image ? tag : 'unknown'
}

function findImage(deployment: unknown): string | undefined {
	if (!isRecord(deployment) || !isRecord(deployment.spec)) return undefined
	const template = deployment.spec.template
	if (!isRecord(template) || !isRecord(template.spec)) return undefined
	const containers = template.spec.containers
	if (!Array.isArray(containers) || !isRecord(containers[0])) return undefined
	const image = containers[0].image
	return typeof image === 'string' ? image : undefined
}

/** The local cluster, or the real one named by NAMZU_TEST_KUBECONFIG. */
export async function clusterUnderTest(
	options: TestClusterOptions = {},
): Promise<ClusterUnderTest> {
	const kubeconfig = process.env.NAMZU_TEST_KUBECONFIG
	const cluster = kubeconfig
		? await connectExternalCluster(kubeconfig, options.signal)
		: await startTestCluster(options)
	// So a person can watch the test's objects: kubectl --kubeconfig <this> get sandboxes -A
	console.info(`cluster: kubeconfig ${cluster.kubeconfigPath}`)
	return cluster
}
