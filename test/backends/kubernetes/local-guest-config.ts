// The backend settings the unit tests share: a warm-pool config whose API is scripted (the access
// is never dialed) and, for `pod-ip` mode, a guest agent the test runs on this machine.
import {
	type KubernetesBackendConfig,
	type ResolvedKubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../../../src/backends/kubernetes/kubernetes-backend-config.js'

/**
 * Namespace `ns`, template `task`, pool `pool`, a 5 ms readiness poll; never dials its server. The
 * ingress check is off: these suites pin other request sequences, and the network checks have
 * their own (network-verifier.test.ts, network-policies.cluster.test.ts).
 */
export const scriptedBackendBase: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: 'ns',
	access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
	sandboxTemplateName: 'task',
	warmPoolName: 'pool',
	readyPollIntervalMs: 5,
	ingress: 'unverified',
}

/** `pod-ip` mode to a local guest listening on `agentPort`, with a 10 s readiness budget. */
export function podIpGuestConfig(
	agentPort: number,
	overrides: Partial<KubernetesBackendConfig> = {},
): ResolvedKubernetesBackendConfig {
	return resolveKubernetesBackendConfig({
		...scriptedBackendBase,
		agentAddress: 'pod-ip',
		agentPort,
		readyTimeoutMs: 10_000,
		...overrides,
	})
}
