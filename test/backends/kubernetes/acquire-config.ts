// The warm-pool backend config the acquire, lease and fleet-verb unit tests share: namespace
// `sandboxes`, template `task`, pool `pool`, a 5 ms poll and a 400 ms readiness budget, against a
// scripted API port (the access is never dialed).
import {
	type KubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../../../src/backends/kubernetes/kubernetes-backend-config.js'

export const ns = 'sandboxes'
export const claims = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxclaims`
export const base: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: ns,
	access: { server: 'https://127.0.0.1:6443', getToken: () => 't' },
	sandboxTemplateName: 'task',
	warmPoolName: 'pool',
	readyPollIntervalMs: 5,
	readyTimeoutMs: 400,
}
export const config = (overrides: Partial<KubernetesBackendConfig> = {}) =>
	resolveKubernetesBackendConfig({ ...base, ...overrides })
