/**
 * The process kubelet's public surface: `startProcessKubelet` (called by `startTestCluster()`),
 * its options, faults and handle, plus the pod runtime and the harness network for tests that run
 * pods without an API server.
 */
export { HarnessNetwork } from './harness-network.js'
export type { ClusterAccess } from './kube-client.js'
export type { ObjectRef } from './kube-types.js'
export {
	BlockDiskError,
	HarnessNetworkError,
	KubeApiError,
	KubeletFaultError,
} from './kubelet-errors.js'
export { type PodAgentTarget, podAgentRequest, podExec } from './pod-agent-client.js'
export { PodNetworkAllocator } from './pod-network.js'
export { PodRuntime, type PodRuntimeDeps } from './pod-runtime.js'
export {
	type KubeletFaults,
	type ProcessKubelet,
	type ProcessKubeletOptions,
	SYNC_INTERVAL_MS,
	startProcessKubelet,
} from './process-kubelet.js'
