import {
	createKubernetesSandboxProvider,
	type KubernetesBackendConfig,
} from './backends/kubernetes/index.js'
import { createLocalSandboxProvider, type LocalBackendConfig } from './backends/local/index.js'
import { CONFIG_SITE, requireObject } from './contract/argument-validators.js'
import { SandboxBackendNotImplementedError } from './contract/errors.js'
import type { SandboxProvider } from './contract/provider.js'
import type { SandboxProviderDefaults } from './provider-defaults.js'

/** Tiers this build implements. Later tiers add arms here. */
export type SandboxBackendConfig = LocalBackendConfig | KubernetesBackendConfig

export interface SandboxProviderConfig extends SandboxProviderDefaults {
	readonly backend: SandboxBackendConfig
}

/**
 * Picks the backend once, from `backend.tier`. Contacts nothing until `create()`; a config that is
 * not an object, or a backend that is not, is a `SandboxConfigError` before anything else.
 */
export function createSandboxProvider(config: SandboxProviderConfig): SandboxProvider {
	requireObject(CONFIG_SITE, 'config', config)
	const backend: { readonly tier?: unknown } = requireObject(CONFIG_SITE, 'backend', config.backend)
	switch (config.backend.tier) {
		case 'process':
			return createLocalSandboxProvider(config.backend, config)
		case 'microvm':
			if (config.backend.service === 'kubernetes') {
				return createKubernetesSandboxProvider(config.backend, config)
			}
			throw new SandboxBackendNotImplementedError(`microvm/${String(config.backend.service)}`)
		default:
			throw new SandboxBackendNotImplementedError(String(backend.tier))
	}
}
