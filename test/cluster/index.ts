// The cluster harness's public surface for tests: start (or connect to) a cluster, its access and
// faults, and the small API/object helpers the cluster tests share.
export type {
	ApiFaultHandle,
	ApiFaultMatch,
	ApiFaultRule,
	ApiPauseHandle,
} from './api-fault-proxy.js'
export type { ClusterAccess } from './cluster-access.js'
export {
	boundSandboxName,
	type Condition,
	condition,
	controllerOf,
	createTestNamespace,
	isReady,
	type KubeList,
	type KubeObject,
	listItems,
	waitGone,
	waitObject,
} from './cluster-objects.js'
export {
	type ClusterUnderTest,
	clusterUnderTest,
	connectExternalCluster,
	type ExternalCluster,
} from './external-cluster.js'
export { KubeApi, KubeApiError, type KubeResponse, type PatchType } from './kube-api.js'
export {
	assertPodRouted,
	execInPod,
	type PodExecResult,
	UnroutedPodAddressError,
} from './pod-agent.js'
export {
	agentPodSpec,
	agentPort,
	directSandbox,
	paths,
	sandboxClaim,
	sandboxTemplate,
	warmPool,
} from './sandbox-fixtures.js'
export {
	type ApiFaults,
	ClusterBinariesMissingError,
	type ClusterEndpoints,
	type ClusterFaults,
	type ClusterVersions,
	startTestCluster,
	type TestCluster,
	type TestClusterOptions,
} from './test-cluster.js'
export { WaitTimeoutError, waitFor } from './wait-for.js'
