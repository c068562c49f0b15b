/**
 * `config.egress.perSandbox`: live `setNetworkPolicy` on task sandboxes, one CiliumNetworkPolicy
 * per sandbox. Its types and validation, pure and synchronous, so a refusal lands while the backend
 * is built. `engine: 'core'` is refused: core NetworkPolicy has no hostname concept to translate an
 * allowlist into.
 */
import { isRecord } from '../../../common/is-record.js'
import {
	CONFIG_SITE,
	describeReceived,
	refuseUnknownKeys,
	requireObject,
} from '../../../contract/argument-validators.js'
import { TEMPLATE_LABEL } from '../kubernetes-objects.js'
import {
	type KubernetesCiliumNarrowing,
	NARROWING_KEYS,
	narrowingFields,
	type ResolvedCiliumNarrowing,
	resolveNarrowing,
} from './cilium-narrowing-config.js'
import {
	KubernetesPerSandboxEgressConfigError,
	KubernetesWorkspacePerSandboxEgressConfigError,
} from './per-sandbox-errors.js'

/**
 * The key carries the same controller prerequisite as the egress profile key: its domain must be
 * listed in `allowed-label-domains` of the controller's `agent-sandbox-config` ConfigMap.
 */
export const DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY = 'sandbox.namzu.ai/per-sandbox-egress'

export interface KubernetesPerSandboxEgressConfig {
	/** The pod label each sandbox's policy selects (value: the owner's name). */
	readonly labelKey?: string
	/** Default and only accepted value `cilium`; `core` is refused. */
	readonly engine?: 'cilium' | 'core'
	/** The same options `ciliumNarrowing` has, applied to every per-sandbox list. */
	readonly narrowing?: KubernetesCiliumNarrowing
}

export interface ResolvedPerSandboxEgress {
	readonly labelKey: string
	readonly narrowing?: ResolvedCiliumNarrowing
}

const PER_SANDBOX_KEYS = Object.keys({
	labelKey: true,
	engine: true,
	narrowing: true,
} satisfies Record<keyof KubernetesPerSandboxEgressConfig, true>)

/** `<domain>/<name>`: the controller refuses an unprefixed pod label key. */
const PREFIXED_LABEL_KEY =
	/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/

function resolveLabelKey(value: unknown, profileLabelKey: string | undefined): string {
	const key = value ?? DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY
	if (typeof key !== 'string' || key.length > 317 || !PREFIXED_LABEL_KEY.test(key)) {
		throw new KubernetesPerSandboxEgressConfigError(
			'perSandbox.labelKey',
			`must be a prefixed label key such as ${DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY}, got ${describeReceived(key)}`,
		)
	}
	if (key === TEMPLATE_LABEL || key === profileLabelKey) {
		throw new KubernetesPerSandboxEgressConfigError(
			'perSandbox.labelKey',
			`must not be ${key}: it would overwrite the ${key === TEMPLATE_LABEL ? 'template' : 'egress profile'} label`,
		)
	}
	return key
}

/** Validates `config.egress.perSandbox`; `undefined` when it is not set. */
export function resolvePerSandboxEgress(
	value: unknown,
	context: { readonly namespace: string; readonly profileLabelKey?: string },
): ResolvedPerSandboxEgress | undefined {
	if (value === undefined) return undefined
	const given = requireObject(CONFIG_SITE, 'egress.perSandbox', value)
	refuseUnknownKeys(CONFIG_SITE, 'egress.perSandbox', given, PER_SANDBOX_KEYS)
	const engine = given.engine ?? 'cilium'
	if (engine === 'core') {
		throw new KubernetesPerSandboxEgressConfigError(
			'perSandbox.engine',
			"'core' cannot enforce a hostname allowlist: core NetworkPolicy has no FQDN rules; use 'cilium' on a Cilium cluster",
		)
	}
	if (engine !== 'cilium') {
		throw new KubernetesPerSandboxEgressConfigError(
			'perSandbox.engine',
			`must be 'cilium', got ${describeReceived(engine)}`,
		)
	}
	const labelKey = resolveLabelKey(given.labelKey, context.profileLabelKey)
	if (given.narrowing === undefined) return { labelKey }
	const raw = requireObject(CONFIG_SITE, 'egress.perSandbox.narrowing', given.narrowing)
	refuseUnknownKeys(CONFIG_SITE, 'egress.perSandbox.narrowing', raw, NARROWING_KEYS)
	if (narrowingFields(raw).length === 0) return { labelKey }
	return { labelKey, narrowing: resolveNarrowing(raw, context.namespace, 'perSandbox.narrowing') }
}

/**
 * A workspace never carries `setNetworkPolicy` (nothing in its create path composes the label or
 * tracks an owner uid), so `createKubernetesWorkspace` refuses the option rather than accept it.
 */
export function refuseWorkspacePerSandboxEgress(egress: unknown): void {
	if (isRecord(egress) && egress.perSandbox !== undefined) {
		throw new KubernetesWorkspacePerSandboxEgressConfigError()
	}
}
