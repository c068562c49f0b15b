/**
 * The local tier as the MCP server's sandbox source: every `sandbox_create` gets the server's
 * settings (egress, isolation, state directory), never anything a tool call chose beyond
 * `keep_alive`; a kept-alive sandbox is reopened by id from the state directory.
 */
import { createLocalSandboxProvider, type LocalBackendConfig } from '../index.js'
import { localSandboxFacts } from './sandbox-facts.js'
import type { McpSandboxSource } from './sandbox-registry.js'

export interface LocalSourceOptions {
	readonly backend: LocalBackendConfig
	readonly allowNetwork: boolean
}

export function localSandboxSource(options: LocalSourceOptions): McpSandboxSource {
	const provider = createLocalSandboxProvider(options.backend)
	const egress = { kind: options.allowNetwork ? 'allow-all' : 'deny-all' } as const
	return {
		facts: localSandboxFacts({
			allowNetwork: options.allowNetwork,
			isolation: options.backend.isolation ?? 'bubblewrap',
			bestEffortLimits: options.backend.defaultLimits === 'best-effort',
		}),
		create: ({ keepAlive, signal }) =>
			provider.create({
				egress,
				...(keepAlive ? { keepAlive: true } : {}),
				...(signal ? { signal } : {}),
			}),
		open: (id, openOptions) => provider.open(id, openOptions),
		close: () => provider.close(),
	}
}
