/**
 * The checks a Kubernetes provider would otherwise meet at its first `create()`, done at once:
 * the backend config's shape, and the cluster access it names read and parsed (the kubeconfig and
 * its context, certificates and token file, or the in-cluster service account). The cluster
 * itself is not contacted. A long-running server (`namzu-sandbox mcp`) calls this before serving,
 * so a wrong `--kubeconfig` stops it at start instead of failing its first tool call.
 */

import { resolveKubernetesAccess } from './api/kubernetes-access.js'
import type { KubernetesBackendConfig } from './kubernetes-backend-config.js'
import { resolveKubernetesBackendConfig } from './kubernetes-backend-config.js'

/** Throws `SandboxConfigError` or `KubernetesCredentialError` naming what is wrong. */
export function checkKubernetesAccess(config: KubernetesBackendConfig): void {
	const resolved = resolveKubernetesBackendConfig(config)
	resolveKubernetesAccess(resolved.access)
}
