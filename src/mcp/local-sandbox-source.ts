/**
 * The local tier as the MCP server's sandbox source: every `sandbox_create` gets the server's
 * settings (egress, isolation, state directory), never anything a tool call chose beyond
 * `keep_alive`; a kept-alive sandbox is reopened by id from the state directory.
 */
import {
	createLocalSandboxProvider,
	type EgressPolicy,
	type LocalBackendConfig,
	type SandboxProvider,
} from '../index.js'
import { localSandboxFacts } from './sandbox-facts.js'
import type { McpCheckpointStore, McpSandboxSource } from './sandbox-registry.js'

/** What every sandbox of the server gets beyond the defaults: the CLI's sandbox flags. */
export interface LocalSandboxSettings {
	readonly env?: Readonly<Record<string, string>>
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
	/** A static egress allowlist (`--allow-host`), with host loopback ports (`--host-port`). */
	readonly allowedHosts?: readonly string[]
	readonly hostPorts?: readonly number[]
}

export interface LocalSourceOptions {
	readonly backend: LocalBackendConfig
	readonly allowNetwork: boolean
	readonly sandbox?: LocalSandboxSettings
}

/** The egress the server's flags name (shared with the container tier's source). */
export function sandboxEgress(options: {
	readonly allowNetwork: boolean
	readonly sandbox?: LocalSandboxSettings
}): EgressPolicy {
	if (options.allowNetwork) return { kind: 'allow-all' }
	const hosts = options.sandbox?.allowedHosts ?? []
	const ports = options.sandbox?.hostPorts ?? []
	if (hosts.length === 0 && ports.length === 0) return { kind: 'deny-all' }
	return { kind: 'static', allowedHosts: hosts, ...(ports.length > 0 ? { hostPorts: ports } : {}) }
}

/**
 * The provider's checkpoint store, when it takes filesystem checkpoints and can list and delete
 * them (shared with the container tier's source); undefined otherwise, and no checkpoint tool is
 * listed then.
 */
function providerCheckpoints(provider: SandboxProvider): McpCheckpointStore | undefined {
	const { listCheckpoints, deleteCheckpoint } = provider
	if (!provider.checkpointKinds.includes('filesystem') || !listCheckpoints || !deleteCheckpoint)
		return undefined
	return {
		kinds: provider.checkpointKinds,
		list: (signal) => listCheckpoints.call(provider, signal ? { signal } : {}),
		delete: (id, signal) => deleteCheckpoint.call(provider, id, signal ? { signal } : {}),
	}
}

/** `{ checkpoints }` when the provider keeps them, `{}` otherwise (for a source's spread). */
export function optionalCheckpoints(provider: SandboxProvider): {
	readonly checkpoints?: McpCheckpointStore
} {
	const checkpoints = providerCheckpoints(provider)
	return checkpoints === undefined ? {} : { checkpoints }
}

export function localSandboxSource(options: LocalSourceOptions): McpSandboxSource {
	const provider = createLocalSandboxProvider(options.backend)
	const egress = sandboxEgress(options)
	const { allowedHosts: _hosts, hostPorts: _ports, ...limits } = options.sandbox ?? {}
	return {
		facts: localSandboxFacts({
			allowNetwork: options.allowNetwork,
			isolation: options.backend.isolation ?? 'bubblewrap',
			bestEffortLimits: options.backend.defaultLimits === 'best-effort',
			egress,
			...limits,
		}),
		create: ({ keepAlive, from, signal }) =>
			provider.create({
				...limits,
				egress,
				...(keepAlive ? { keepAlive: true } : {}),
				...(from === undefined ? {} : { from }),
				...(signal ? { signal } : {}),
			}),
		...optionalCheckpoints(provider),
		open: (id, openOptions) => provider.open(id, openOptions),
		close: () => provider.close(),
	}
}
