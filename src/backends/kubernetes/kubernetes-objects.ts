/**
 * The objects and paths of the agent-sandbox v1beta1 resources this backend speaks, as pure
 * builders. A claim is pristine (`warmPoolRef` and lifecycle only: an `env` or
 * `volumeClaimTemplates` would force the controller to cold-start instead of adopting a pool
 * sandbox); a direct `Sandbox` copies the template's pod template and `volumeClaimTemplates`
 * verbatim and adds the `sandbox.namzu.ai/template` label. A task's objects carry an absolute
 * `shutdownTime` and `shutdownPolicy: Delete` (never `ttlSecondsAfterFinished`, whose clock a
 * crashed host never starts); a workspace's Sandbox carries neither — an expiry would delete its disk.
 */
import { isRecord } from '../../common/is-record.js'
import { KubernetesTemplateInvalidError } from './acquire-errors.js'

export const SANDBOX_API_GROUP_VERSION = 'agents.x-k8s.io/v1beta1'
export const EXTENSIONS_API_GROUP_VERSION = 'extensions.agents.x-k8s.io/v1beta1'
/** Pod label a direct Sandbox carries (the controller writes its own only on pool sandboxes). */
export const TEMPLATE_LABEL = 'sandbox.namzu.ai/template'

export interface KubernetesObjectMeta {
	readonly name?: string
	readonly generateName?: string
	readonly namespace?: string
	readonly uid?: string
	readonly resourceVersion?: string
	readonly creationTimestamp?: string
	readonly labels?: Readonly<Record<string, string>>
	readonly annotations?: Readonly<Record<string, string>>
	readonly deletionTimestamp?: string
	readonly ownerReferences?: readonly unknown[]
}

export interface KubernetesCondition {
	readonly type: string
	readonly status: string
	readonly reason?: string
	readonly message?: string
}

/** The fields of any object this backend reads; the rest passes through untyped. */
export interface KubernetesObject {
	readonly apiVersion?: string
	readonly kind?: string
	readonly metadata: KubernetesObjectMeta
	readonly spec?: Readonly<Record<string, unknown>>
	readonly status?: Readonly<Record<string, unknown>>
}

export interface KubernetesList<T = KubernetesObject> {
	readonly items: readonly T[]
}

const sandboxes = (ns: string) => `/apis/${SANDBOX_API_GROUP_VERSION}/namespaces/${ns}/sandboxes`
const extensions = (ns: string, plural: string) =>
	`/apis/${EXTENSIONS_API_GROUP_VERSION}/namespaces/${ns}/${plural}`

/** Every path this backend requests; names are DNS-1123 (validated) so they need no escaping. */
export const kubernetesPaths = {
	sandboxes,
	sandbox: (ns: string, name: string) => `${sandboxes(ns)}/${name}`,
	claims: (ns: string) => extensions(ns, 'sandboxclaims'),
	claim: (ns: string, name: string) => `${extensions(ns, 'sandboxclaims')}/${name}`,
	template: (ns: string, name: string) => `${extensions(ns, 'sandboxtemplates')}/${name}`,
	warmPool: (ns: string, name: string) => `${extensions(ns, 'sandboxwarmpools')}/${name}`,
	pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
	pod: (ns: string, name: string) => `/api/v1/namespaces/${ns}/pods/${name}`,
}

/** RFC 3339 with seconds precision, `claimTtlSeconds` after `nowMs`. */
export function shutdownTimeAt(nowMs: number, ttlSeconds: number): string {
	const at = new Date(Math.floor(nowMs / 1000) * 1000 + ttlSeconds * 1000)
	return at.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

export interface ClaimBuildInput {
	readonly name: string
	readonly warmPoolName: string
	readonly shutdownTime: string
	readonly claimLabels: Readonly<Record<string, string>>
	/** Labels the controller writes onto the bound pod (the egress profile); none: key absent. */
	readonly podLabels?: Readonly<Record<string, string>>
}

/**
 * A pristine `SandboxClaim`: pool reference, lifecycle and the host's labels, nothing else — but
 * the egress profile's pod label, which rides in `additionalPodMetadata` (it keeps the warm path).
 */
export function buildSandboxClaim(input: ClaimBuildInput): KubernetesObject {
	const labels = Object.keys(input.claimLabels).length > 0 ? { labels: input.claimLabels } : {}
	const podLabels = input.podLabels ?? {}
	return {
		apiVersion: EXTENSIONS_API_GROUP_VERSION,
		kind: 'SandboxClaim',
		metadata: { name: input.name, ...labels },
		spec: {
			warmPoolRef: { name: input.warmPoolName },
			...(Object.keys(podLabels).length > 0
				? { additionalPodMetadata: { labels: { ...podLabels } } }
				: {}),
			lifecycle: { shutdownTime: input.shutdownTime, shutdownPolicy: 'Delete' },
		},
	}
}

export interface DirectSandboxBuildInput {
	readonly name: string
	readonly templateName: string
	/** The `SandboxTemplate` as read from the API. */
	readonly template: KubernetesObject
	/** The task path's expiry; a workspace passes none and carries no `shutdownPolicy` either. */
	readonly shutdownTime?: string
	/** Pod labels beyond the template label (the egress profile). */
	readonly podLabels?: Readonly<Record<string, string>>
}

function record(value: unknown): Record<string, unknown> | undefined {
	return isRecord(value) ? value : undefined
}

/** A `Sandbox` from the template's blueprint, with the template (and profile) label on its pod. */
export function buildDirectSandbox(input: DirectSandboxBuildInput): KubernetesObject {
	const spec = record(input.template.spec)
	const podTemplate = record(spec?.podTemplate)
	if (!podTemplate || !record(podTemplate.spec)) {
		throw new KubernetesTemplateInvalidError(input.templateName, 'spec.podTemplate.spec is missing')
	}
	const podMeta = record(podTemplate.metadata) ?? {}
	const podLabels = record(podMeta.labels) ?? {}
	const copied: Record<string, unknown> = {}
	if (spec?.volumeClaimTemplates !== undefined)
		copied.volumeClaimTemplates = spec.volumeClaimTemplates
	if (spec?.service !== undefined) copied.service = spec.service
	return {
		apiVersion: SANDBOX_API_GROUP_VERSION,
		kind: 'Sandbox',
		metadata: { name: input.name, labels: { [TEMPLATE_LABEL]: input.templateName } },
		spec: {
			podTemplate: {
				...podTemplate,
				metadata: {
					...podMeta,
					labels: { ...podLabels, ...input.podLabels, [TEMPLATE_LABEL]: input.templateName },
				},
			},
			...copied,
			...(input.shutdownTime === undefined
				? {}
				: { shutdownTime: input.shutdownTime, shutdownPolicy: 'Delete' }),
		},
	}
}

/** The merge-patch body that moves a created object's expiry (claims keep it under `lifecycle`). */
/** The labels the pod of a direct Sandbox will carry. */
export function directSandboxPodLabels(
	sandbox: KubernetesObject,
): Readonly<Record<string, string>> {
	const podTemplate = record(sandbox.spec?.podTemplate)
	const labels = record(record(podTemplate?.metadata)?.labels) ?? {}
	return Object.fromEntries(
		Object.entries(labels).filter(
			(entry): entry is [string, string] => typeof entry[1] === 'string',
		),
	)
}

export function shutdownTimePatch(kind: 'claim' | 'sandbox', shutdownTime: string): object {
	return kind === 'claim' ? { spec: { lifecycle: { shutdownTime } } } : { spec: { shutdownTime } }
}

/** Client-generated name: `<prefix>-<10 random base-36 chars>`, a valid DNS-1123 label. */
export function generateObjectName(prefix: string, random: () => number = Math.random): string {
	let suffix = ''
	while (suffix.length < 10) suffix += Math.floor(random() * 36).toString(36)
	return `${prefix.slice(0, 40)}-${suffix}`
}
