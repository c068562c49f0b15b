/**
 * The MCP server behind `namzu-sandbox mcp`: a sandbox source, one registry, and a transport
 * (stdio, or Streamable HTTP with a bearer token on loopback by default). Loaded by the CLI only
 * when that command runs, so nothing else pays for the SDK.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import {
	checkKubernetesAccess,
	type KubernetesBackendConfig,
	type LocalBackendConfig,
} from '../index.js'
import { type ContainerProviderConfig, containerSandboxSource } from './container-sandbox-source.js'
import { checkHttpAccess } from './http-access.js'
import { kubernetesSandboxSource } from './kubernetes-sandbox-source.js'
import { type LocalSandboxSettings, localSandboxSource } from './local-sandbox-source.js'
import { type McpSandboxScope, serveMcpHttp } from './mcp-http.js'
import { createMcpServer } from './mcp-server.js'
import { McpSandboxRegistry, type McpSandboxSource } from './sandbox-registry.js'

export type { ContainerProviderConfig } from './container-sandbox-source.js'
export { isLoopbackHost, MIN_MCP_TOKEN_LENGTH } from './http-access.js'
export {
	ForeignSandboxError,
	McpHttpConfigError,
	McpKeepAliveUnsupportedError,
	UnknownSandboxError,
} from './mcp-errors.js'
export type { McpSandboxScope } from './mcp-http.js'

/** The tier every `sandbox_create` of this server uses, with the server's settings for it. */
export type McpTierConfig =
	| {
			readonly tier: 'local'
			readonly backend: LocalBackendConfig
			readonly allowNetwork: boolean
			/** What every sandbox gets beyond the defaults (the CLI's sandbox flags). */
			readonly sandbox?: LocalSandboxSettings
	  }
	| {
			readonly tier: 'container'
			/** Backend (image, state directory, default limits) and layout, as the CLI builds them. */
			readonly provider: ContainerProviderConfig
			readonly allowNetwork: boolean
			readonly sandbox?: LocalSandboxSettings
	  }
	| { readonly tier: 'kubernetes'; readonly backend: KubernetesBackendConfig }

export interface McpServeOptions {
	readonly transport: 'stdio' | 'http'
	readonly host: string
	readonly port: number
	readonly allowRemote: boolean
	/** HTTP only; default `client`: each client sees and drives only the sandboxes it created. */
	readonly sandboxScope?: McpSandboxScope
	readonly token: string
	readonly source: McpTierConfig
	readonly version: string
	/** Ends serving: sandboxes the server created are destroyed unless kept alive. */
	readonly signal: AbortSignal
	/** Told the endpoint once HTTP is listening. */
	readonly onListening?: (url: string) => void
}

function aborted(signal: AbortSignal): Promise<void> {
	return new Promise((resolve) => {
		if (signal.aborted) resolve()
		else signal.addEventListener('abort', () => resolve(), { once: true })
	})
}

function sandboxSource(source: McpTierConfig): McpSandboxSource {
	const sandbox = source.tier !== 'kubernetes' && source.sandbox ? { sandbox: source.sandbox } : {}
	switch (source.tier) {
		case 'local':
			return localSandboxSource({
				backend: source.backend,
				allowNetwork: source.allowNetwork,
				...sandbox,
			})
		case 'container':
			return containerSandboxSource({
				provider: source.provider,
				allowNetwork: source.allowNetwork,
				...sandbox,
			})
		default:
			return kubernetesSandboxSource(source.backend)
	}
}

/**
 * Serves until `signal` aborts (or, on stdio, the client closes stdin), then cleans up. A
 * configuration it can check without a client (the HTTP bind and token, the Kubernetes access)
 * is refused before serving.
 */
export async function serveMcp(options: McpServeOptions): Promise<void> {
	if (options.transport === 'http')
		checkHttpAccess(options.host, options.allowRemote, options.token)
	const source = options.source
	// A wrong kubeconfig, context or certificate stops the server now, not at its first call.
	if (source.tier === 'kubernetes') checkKubernetesAccess(source.backend)
	const registry = new McpSandboxRegistry(sandboxSource(source))
	try {
		if (options.transport === 'http') {
			const http = await serveMcpHttp(registry, options)
			options.onListening?.(http.url)
			await aborted(options.signal)
			await http.close()
			return
		}
		const transport = new StdioServerTransport()
		const closed = new Promise<void>((resolve) => {
			transport.onclose = () => resolve()
			process.stdin.once('end', () => resolve())
		})
		// One client: it sees every sandbox of this server.
		const server = createMcpServer(registry.forClient(), options.version)
		await server.connect(transport)
		await Promise.race([closed, aborted(options.signal)])
		await server.close()
	} finally {
		await registry.close()
	}
}
