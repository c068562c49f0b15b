/**
 * A `create()` config of the container tier, checked before anything is started. The portable
 * fields, the environment and the egress kinds go through the local tier's one resolver (the same
 * checks, the same refusals of `static` / `resolver`); what a container cannot do yet is refused by
 * name: a host working directory (the workspace is the container's own), kept-alive sandboxes,
 * extra read-only or hidden host paths, and `allow-all` egress.
 */
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxCreateConfig } from '../../contract/provider.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import { resolveLocalSandboxSpec } from '../local/local-sandbox-spec.js'
import { ContainerEgressUnsupportedError } from './container-errors.js'

export interface ContainerSandboxCreateConfig extends SandboxCreateConfig {
	/** Cores, enforced as a CFS quota. */
	readonly cpuLimit?: number
	/** A workspace of this many MiB (a loop-mounted filesystem); writes past it fail with ENOSPC. */
	readonly diskLimitMb?: number
}

export interface ContainerSandboxSpec {
	readonly env: Readonly<Record<string, string>>
	readonly timeoutMs?: number
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
	readonly egress: 'deny-all'
}

const REFUSED_KEYS: Readonly<Record<string, string>> = {
	workingDirectory:
		"the container tier serves the 'ephemeral' workspace mode only; host directories come in through the provider's layout",
	keepAlive: 'kept-alive sandboxes are a local-tier feature',
	keepAliveMs: 'kept-alive sandboxes are a local-tier feature',
	readOnlyPaths: "host paths come in through the provider's layout",
	hiddenPaths:
		'the container sees only its image and its layout; there is nothing of the host to hide',
}

export function resolveContainerSandboxSpec(
	config: ContainerSandboxCreateConfig,
	defaults: SandboxProviderDefaults,
): ContainerSandboxSpec {
	const local = resolveLocalSandboxSpec(config, defaults)
	for (const [key, why] of Object.entries(REFUSED_KEYS)) {
		if (Reflect.get(config, key) !== undefined)
			throw new SandboxConfigError(key, `not supported: ${why}`)
	}
	if (local.egress !== 'deny-all') {
		// 'proxied' is the local tier's name for static and resolver: name the caller's own kind.
		const asked = (config.egress ?? defaults.defaultEgress)?.kind
		throw new ContainerEgressUnsupportedError(
			local.egress === 'proxied' ? String(asked ?? 'static') : local.egress,
		)
	}
	return {
		env: local.env,
		...(local.timeoutMs === undefined ? {} : { timeoutMs: local.timeoutMs }),
		...(local.memoryLimitMb === undefined ? {} : { memoryLimitMb: local.memoryLimitMb }),
		...(local.maxProcesses === undefined ? {} : { maxProcesses: local.maxProcesses }),
		...(local.cpuLimit === undefined ? {} : { cpuLimit: local.cpuLimit }),
		...(local.diskLimitMb === undefined ? {} : { diskLimitMb: local.diskLimitMb }),
		egress: 'deny-all',
	}
}

/** Whether a pooled container (started with `pooled`) can serve a create asking for `requested`. */
export function canServeFromContainerPool(
	pooled: ContainerSandboxSpec,
	requested: ContainerSandboxSpec,
): boolean {
	return (
		Object.keys(requested.env).length === 0 &&
		Object.keys(pooled.env).length === 0 &&
		requested.memoryLimitMb === pooled.memoryLimitMb &&
		requested.maxProcesses === pooled.maxProcesses &&
		requested.cpuLimit === pooled.cpuLimit &&
		requested.diskLimitMb === pooled.diskLimitMb
	)
}
