import { createACIStandbyPoolProvider } from './backends/container/aci/aci-sandbox-provider.js'
import {
	type ACIStandbyPoolBackendConfig,
	type ContainerBackendConfig,
	type ContainerSandboxLayout,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from './backends/container/index.js'
import {
	createKubernetesSandboxProvider,
	type KubernetesBackendConfig,
} from './backends/kubernetes/index.js'
import {
	createLocalSandboxProvider,
	type LocalBackendConfig,
	type LocalSandboxProvider,
} from './backends/local/index.js'
import {
	createMicroVMSandboxProvider,
	type MicroVMBackendConfig,
	type MicroVMSandboxProvider,
} from './backends/microvm/index.js'
import { CONFIG_SITE, describeReceived, requireObject } from './contract/argument-validators.js'
import { SandboxBackendNotImplementedError, SandboxConfigError } from './contract/errors.js'
import type { SandboxProvider } from './contract/provider.js'
import type { SandboxProviderDefaults } from './provider-defaults.js'

/** Every backend a provider can be built for. */
export type SandboxBackendConfig =
	| LocalBackendConfig
	| KubernetesBackendConfig
	| MicroVMBackendConfig
	| ContainerBackendConfig
	| ACIStandbyPoolBackendConfig

/** A provider config: each container arm pairs its backend with the layout it needs. */
export type SandboxProviderConfig =
	| (SandboxProviderDefaults & {
			readonly backend: LocalBackendConfig | KubernetesBackendConfig | MicroVMBackendConfig
	  })
	| (SandboxProviderDefaults & {
			readonly backend: ContainerBackendConfig
			readonly layout: ContainerSandboxLayout
	  })
	| (SandboxProviderDefaults & {
			readonly backend: ACIStandbyPoolBackendConfig
			readonly layout: ContainerSandboxLayout
	  })

/** Every `backend.tier`, in the order a refusal lists them. */
const BACKEND_TIERS: readonly SandboxBackendConfig['tier'][] = ['process', 'container', 'microvm']

/** Natural guesses at a tier name, each with the config that means it. */
const TIER_GUESSES = new Map<string, string>([
	['local', "the local bubblewrap tier is 'process'"],
	['bubblewrap', "the local bubblewrap tier is 'process'"],
	['bwrap', "the local bubblewrap tier is 'process'"],
	['docker', "OCI containers (runc, crun, runsc) are 'container'"],
	['oci', "OCI containers (runc, crun, runsc) are 'container'"],
	['kubernetes', "Kubernetes agent-sandbox is 'microvm' with service: 'kubernetes'"],
	['firecracker', "Firecracker is 'microvm' with service: 'firecracker'"],
	['qemu', "QEMU is 'microvm' with service: 'qemu'"],
])

/** A `backend.tier` outside the known ones is a `SandboxConfigError` that lists them. */
function checkTier(tier: unknown): void {
	if (BACKEND_TIERS.some((known) => known === tier)) return
	const expected = `one of ${BACKEND_TIERS.map((known) => `'${known}'`).join(', ')}`
	const received = describeReceived(tier)
	const guess = typeof tier === 'string' ? TIER_GUESSES.get(tier) : undefined
	throw new SandboxConfigError(
		'backend.tier',
		`must be ${expected}, got ${received}${guess ? ` (${guess})` : ''}`,
		{ expected, received },
	)
}

type ContainerArm = Extract<SandboxProviderConfig, { readonly layout: ContainerSandboxLayout }>

function isContainerArm(config: SandboxProviderConfig): config is ContainerArm {
	return config.backend.tier === 'container'
}

/** The local tier: `create()` takes its options (`keepAlive`, `cpuLimit`, `diskLimitMb`, …). */
export function createSandboxProvider(
	config: SandboxProviderDefaults & { readonly backend: LocalBackendConfig },
): LocalSandboxProvider
/** The container tier: `create()` takes its options (`cpuLimit`, `diskLimitMb`, …). */
export function createSandboxProvider(
	config: SandboxProviderDefaults & {
		readonly backend: ContainerBackendConfig
		readonly layout: ContainerSandboxLayout
	},
): ContainerSandboxProvider
/** The microVM tier on QEMU or Firecracker: `create()` takes its options (`diskLimitMb`). */
export function createSandboxProvider(
	config: SandboxProviderDefaults & { readonly backend: MicroVMBackendConfig },
): MicroVMSandboxProvider
/**
 * Picks the backend once, from `backend.tier`. Contacts nothing until `create()`; a config that is
 * not an object, a backend that is not, or a `backend.tier` outside the known ones (the error lists
 * them) is a `SandboxConfigError` before anything else.
 */
export function createSandboxProvider(config: SandboxProviderConfig): SandboxProvider
export function createSandboxProvider(config: SandboxProviderConfig): SandboxProvider {
	requireObject(CONFIG_SITE, 'config', config)
	const backend: { readonly tier?: unknown } = requireObject(CONFIG_SITE, 'backend', config.backend)
	checkTier(backend.tier)
	if (isContainerArm(config)) {
		if (config.layout === undefined) {
			throw new SandboxConfigError(
				'layout',
				'a container backend needs a layout (ContainerSandboxLayout, with outputs)',
			)
		}
		if (config.backend.runtime === 'aci-standby-pool') {
			return createACIStandbyPoolProvider(config.backend, config.layout, config)
		}
		return createContainerSandboxProvider(config.backend, config.layout, config)
	}
	switch (config.backend.tier) {
		case 'process':
			return createLocalSandboxProvider(config.backend, config)
		case 'microvm':
			if (config.backend.service === 'kubernetes') {
				return createKubernetesSandboxProvider(config.backend, config)
			}
			if (config.backend.service === 'qemu' || config.backend.service === 'firecracker') {
				return createMicroVMSandboxProvider(config.backend, config)
			}
			throw new SandboxBackendNotImplementedError(`microvm/${String(config.backend.service)}`)
	}
}
