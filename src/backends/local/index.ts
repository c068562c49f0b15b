// Public surface of the local (process / bubblewrap) tier (owned by the local-tier work).
import type { SandboxProvider } from '../../contract/provider.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'

export interface LocalBackendConfig {
	readonly tier: 'process'
}

export function createLocalSandboxProvider(
	_backend: LocalBackendConfig,
	_defaults: SandboxProviderDefaults = {},
): SandboxProvider {
	throw new Error('not implemented yet')
}
