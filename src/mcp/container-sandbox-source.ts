/**
 * The container tier as the MCP server's sandbox source: every `sandbox_create` is an OCI
 * container from the server's image, with the server's egress, environment and limits (the CLI's
 * sandbox flags) and nothing a tool call chose. A container sandbox ends with its provider, so
 * `keep_alive` is refused rather than ignored, and there is nothing to reopen by id.
 */
import {
	type ContainerBackendConfig,
	createSandboxProvider,
	type SandboxProviderConfig,
} from '../index.js'
import {
	type LocalSandboxSettings,
	optionalCheckpoints,
	sandboxEgress,
} from './local-sandbox-source.js'
import { McpKeepAliveUnsupportedError } from './mcp-errors.js'
import { containerSandboxFacts } from './sandbox-facts.js'
import type { McpSandboxSource } from './sandbox-registry.js'

/** The provider config the CLI builds for `--tier container --image DIR` (backend and layout). */
export type ContainerProviderConfig = Extract<
	SandboxProviderConfig,
	{ readonly backend: ContainerBackendConfig }
>

export interface ContainerSourceOptions {
	readonly provider: ContainerProviderConfig
	readonly allowNetwork: boolean
	readonly sandbox?: LocalSandboxSettings
}

export function containerSandboxSource(options: ContainerSourceOptions): McpSandboxSource {
	const provider = createSandboxProvider(options.provider)
	const egress = sandboxEgress(options)
	const { allowedHosts: _hosts, hostPorts: _ports, ...limits } = options.sandbox ?? {}
	return {
		facts: containerSandboxFacts({
			image: options.provider.backend.image,
			allowNetwork: options.allowNetwork,
			bestEffortLimits: options.provider.backend.defaultLimits === 'best-effort',
			egress,
			...limits,
		}),
		create: async ({ keepAlive, from, signal }) => {
			if (keepAlive) throw new McpKeepAliveUnsupportedError('container')
			return provider.create({
				...limits,
				egress,
				...(from === undefined ? {} : { from }),
				...(signal ? { signal } : {}),
			})
		},
		...optionalCheckpoints(provider),
		close: () => provider.close(),
	}
}
