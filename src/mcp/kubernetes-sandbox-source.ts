/**
 * The Kubernetes tier as the MCP server's sandbox source: every `sandbox_create` is a task sandbox
 * from the server's template (or warm pool), with the template's own egress policy. A task sandbox
 * is leased to this process and deleted with it, so `keep_alive` is refused rather than ignored,
 * and there is nothing to reopen by id.
 */
import { createKubernetesSandboxProvider, type KubernetesBackendConfig } from '../index.js'
import { McpKeepAliveUnsupportedError } from './mcp-errors.js'
import { kubernetesSandboxFacts } from './sandbox-facts.js'
import type { McpSandboxSource } from './sandbox-registry.js'

export function kubernetesSandboxSource(backend: KubernetesBackendConfig): McpSandboxSource {
	const provider = createKubernetesSandboxProvider(backend)
	return {
		facts: kubernetesSandboxFacts(backend.sandboxTemplateName),
		create: async ({ keepAlive, signal }) => {
			if (keepAlive) throw new McpKeepAliveUnsupportedError('kubernetes')
			return provider.create(signal ? { signal } : {})
		},
		close: () => provider.close(),
	}
}
