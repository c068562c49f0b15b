/**
 * Refusals of the Kubernetes network boundary: an egress or ingress setting this backend will not
 * emit (thrown while the backend is built, before any request), an applied policy that is missing
 * or differs from the translation, a union of selecting policies wider than the translation, an
 * agent port no policy closes, and a profile label the pod never carried. Each message opens by
 * naming what it refused; none carries a token.
 */
import { SandboxError } from '../../../contract/errors.js'

/** A hostname allowlist under `engine: 'core'`: core `NetworkPolicy` has no FQDN concept. */
export class KubernetesUnenforceableEgressPolicyError extends SandboxError<'egress-unenforceable'> {
	override readonly name = 'KubernetesUnenforceableEgressPolicyError'
	readonly policyKind: string
	readonly engine: 'core'

	constructor(policyKind: string) {
		super(
			`egress policy '${policyKind}' refused: a hostname allowlist cannot be enforced by a core Kubernetes NetworkPolicy (it has no FQDN rules); the cluster needs an FQDN-capable policy engine — set egress.engine: 'cilium' on a Cilium cluster`,
			'egress-unenforceable',
		)
		this.policyKind = policyKind
		this.engine = 'core'
	}
}

/** A value inside `config.egress` this backend will not translate (a CIDR, a port, a DNS suffix). */
export class KubernetesEgressPolicyConfigError extends SandboxError<'invalid-egress-config'> {
	override readonly name = 'KubernetesEgressPolicyConfigError'
	/** Relative to `config.egress`: `policy.exceptCidrs[2]`, `ciliumNarrowing.ports[0]`. */
	readonly field: string

	constructor(field: string, problem: string) {
		super(`egress.${field} refused: ${problem}`, 'invalid-egress-config')
		this.field = field
	}
}

/** `ciliumNarrowing` beside something it cannot narrow: the core engine, or a non-allowlist kind. */
export class KubernetesEgressNarrowingUnsupportedError extends SandboxError<'egress-narrowing-unsupported'> {
	override readonly name = 'KubernetesEgressNarrowingUnsupportedError'
	readonly field: string
	readonly engine: string
	readonly policyKind: string

	constructor(field: string, engine: string, policyKind: string) {
		super(
			`egress.ciliumNarrowing refused: ${field} narrows only a 'static' or 'resolver' allowlist under engine 'cilium' (got policy '${policyKind}' under engine '${engine}')`,
			'egress-narrowing-unsupported',
		)
		this.field = field
		this.engine = engine
		this.policyKind = policyKind
	}
}

/** An `egress.profile` or `egress.profileLabelKey` this backend will not write onto a pod. */
export class KubernetesEgressProfileConfigError extends SandboxError<'invalid-egress-profile'> {
	override readonly name = 'KubernetesEgressProfileConfigError'
	readonly field: 'profile' | 'profileLabelKey'

	constructor(field: 'profile' | 'profileLabelKey', problem: string) {
		super(`egress.${field} refused: ${problem}`, 'invalid-egress-profile')
		this.field = field
	}
}

export type KubernetesPolicyKind = 'NetworkPolicy' | 'CiliumNetworkPolicy'

/** The named policy `config.egress` verifies does not exist (404) in the namespace. */
export class KubernetesEgressPolicyNotAppliedError extends SandboxError<'egress-policy-not-applied'> {
	override readonly name = 'KubernetesEgressPolicyNotAppliedError'
	readonly policyKind: KubernetesPolicyKind
	readonly policyName: string
	readonly namespace: string

	constructor(
		policyKind: KubernetesPolicyKind,
		policyName: string,
		namespace: string,
		options: { cause?: unknown } = {},
	) {
		super(
			`egress refused: ${policyKind} ${namespace}/${policyName} is not applied; apply the translation of config.egress (this backend only reads policies, it never writes one)`,
			'egress-policy-not-applied',
			{ cause: options.cause },
		)
		this.policyKind = policyKind
		this.policyName = policyName
		this.namespace = namespace
	}
}

/** The named policy exists but differs from the translation; `field` is the first path that does. */
export class KubernetesEgressPolicyMismatchError extends SandboxError<'egress-policy-mismatch'> {
	override readonly name = 'KubernetesEgressPolicyMismatchError'
	readonly policyKind: KubernetesPolicyKind
	readonly policyName: string
	/** `spec.egress[0].ports[1].port`, `spec.podSelector.matchLabels`, … */
	readonly field: string
	/** The translation's value at `field`, as JSON (absent: `undefined`). */
	readonly expected: string | undefined
	/** The applied object's value at `field`, as JSON. */
	readonly actual: string | undefined

	constructor(fields: {
		policyKind: KubernetesPolicyKind
		policyName: string
		field: string
		expected: string | undefined
		actual: string | undefined
	}) {
		super(
			`egress refused: ${fields.policyKind} ${fields.policyName} differs from the translation of config.egress at ${fields.field} (expected ${fields.expected ?? 'absent'}, found ${fields.actual ?? 'absent'})`,
			'egress-policy-mismatch',
		)
		this.policyKind = fields.policyKind
		this.policyName = fields.policyName
		this.field = fields.field
		this.expected = fields.expected
		this.actual = fields.actual
	}
}

/** A policy collection the checks could not enumerate: a 403 is `forbidden`, a 404 `unserved`. */
export interface UnreadPolicySource {
	readonly resource: 'networkpolicies' | 'ciliumnetworkpolicies'
	readonly apiGroup: 'networking.k8s.io' | 'cilium.io'
	readonly status: 'forbidden' | 'unserved'
	/** The verb to grant (`list`) when `forbidden`. */
	readonly verb: 'list'
}

/** @deprecated renamed `UnreadPolicySource`; both checks report it. */
export type UnreadIngressPolicySource = UnreadPolicySource

export type EgressPolicyRefusal = 'policy-widens-egress' | 'no-enforcing-policy' | 'not-evaluable'

/** What the union check decided of one policy. */
export type EgressPolicyVerdict =
	/** Its selector does not match the pod's labels. */
	| 'not-selecting'
	/** Selects the pod but does not govern egress. */
	| 'no-egress-effect'
	/** Governs egress and every rule it has is inside the translation. */
	| 'within-translation'
	/** Allows a destination the translation does not. */
	| 'widens-egress'
	/** A selector, peer, port or field could not be read. */
	| 'not-evaluable'

export interface ExaminedEgressPolicy {
	readonly kind: KubernetesPolicyKind
	readonly name: string
	readonly verdict: EgressPolicyVerdict
	/** Why, for a verdict other than `not-selecting`. */
	readonly detail?: string
}

/** Some policy selecting the pod lets out more than `config.egress` says, or nothing bounds it. */
export class KubernetesEgressPolicyUnionError extends SandboxError<'egress-union-refused'> {
	override readonly name = 'KubernetesEgressPolicyUnionError'
	readonly refusal: EgressPolicyRefusal
	readonly namespace: string
	readonly podLabels: Readonly<Record<string, string>>
	readonly examined: readonly ExaminedEgressPolicy[]
	readonly unread: readonly UnreadPolicySource[]

	constructor(fields: {
		refusal: EgressPolicyRefusal
		namespace: string
		podLabels: Readonly<Record<string, string>>
		examined: readonly ExaminedEgressPolicy[]
		unread: readonly UnreadPolicySource[]
	}) {
		super(
			`egress refused (${fields.refusal}): ${unionSummary(fields)}; pod labels ${JSON.stringify(fields.podLabels)}; examined: ${describeExamined(fields.examined)}`,
			'egress-union-refused',
		)
		this.refusal = fields.refusal
		this.namespace = fields.namespace
		this.podLabels = fields.podLabels
		this.examined = fields.examined
		this.unread = fields.unread
	}
}

function unionSummary(fields: {
	refusal: EgressPolicyRefusal
	unread: readonly UnreadPolicySource[]
}): string {
	switch (fields.refusal) {
		case 'policy-widens-egress':
			return 'a policy selecting the pod allows more egress than config.egress (policies union); narrow or remove the policy marked widens-egress'
		case 'no-enforcing-policy':
			return 'no policy selecting the pod puts it in egress default-deny, so the translation bounds nothing; apply the translated policy'
		case 'not-evaluable':
			return fields.unread.length > 0
				? `the policies could not all be read (${describeUnread(fields.unread)}); grant the missing verb, or set egress.verify: 'named-object-only' on purpose`
				: 'a policy selecting the pod could not be interpreted; see the policy marked not-evaluable'
	}
}

export type IngressPolicyRefusal = 'no-ingress-policy' | 'agent-port-open' | 'not-evaluable'

export type IngressPolicyVerdict =
	| 'not-selecting'
	| 'no-ingress-effect'
	/** Enforces ingress and admits no wide-open peer on the agent port. */
	| 'closes-agent-port'
	/** Selects the pod but cannot count as coverage (`enableDefaultDeny: { ingress: false }`). */
	| 'does-not-isolate'
	/** Admits a wide-open peer on the agent port. */
	| 'opens-agent-port'
	| 'not-evaluable'

export interface ExaminedIngressPolicy {
	readonly kind: KubernetesPolicyKind
	readonly name: string
	readonly verdict: IngressPolicyVerdict
	readonly detail?: string
}

/** The agent port of the pod is not closed by any applied policy (or one policy opens it). */
export class KubernetesIngressPolicyError extends SandboxError<'ingress-policy-refused'> {
	override readonly name = 'KubernetesIngressPolicyError'
	readonly refusal: IngressPolicyRefusal
	readonly namespace: string
	readonly podLabels: Readonly<Record<string, string>>
	readonly port: number
	readonly examined: readonly ExaminedIngressPolicy[]
	readonly unread: readonly UnreadPolicySource[]

	constructor(fields: {
		refusal: IngressPolicyRefusal
		namespace: string
		podLabels: Readonly<Record<string, string>>
		port: number
		examined: readonly ExaminedIngressPolicy[]
		unread: readonly UnreadPolicySource[]
	}) {
		super(
			`ingress refused (${fields.refusal}): ${ingressSummary(fields)}; pod labels ${JSON.stringify(fields.podLabels)}; examined: ${describeExamined(fields.examined)}`,
			'ingress-policy-refused',
		)
		this.refusal = fields.refusal
		this.namespace = fields.namespace
		this.podLabels = fields.podLabels
		this.port = fields.port
		this.examined = fields.examined
		this.unread = fields.unread
	}
}

function ingressSummary(fields: {
	refusal: IngressPolicyRefusal
	port: number
	namespace: string
	unread: readonly UnreadPolicySource[]
}): string {
	const port = `agent port ${fields.port}/TCP`
	if (fields.unread.length > 0) {
		return `the policies of namespace ${fields.namespace} could not all be read (${describeUnread(fields.unread)}); grant the missing verb to the host's Role rather than applying a policy, or set ingress: 'unverified' on purpose`
	}
	switch (fields.refusal) {
		case 'no-ingress-policy':
			return `no ingress-enforcing policy selects the pod, so its ${port} is reachable from every pod; apply k8s/manifests/networkpolicy.yaml`
		case 'agent-port-open':
			return `a policy selecting the pod admits a wide-open peer on its ${port} (policies union: one open rule opens the port)`
		case 'not-evaluable':
			return `a policy selecting the pod could not be interpreted, so the ${port} cannot be shown closed`
	}
}

function describeUnread(unread: readonly UnreadPolicySource[]): string {
	return unread
		.map((source) =>
			source.status === 'forbidden'
				? `list ${source.resource}.${source.apiGroup} forbidden: grant verb 'list'`
				: `${source.resource}.${source.apiGroup} not served by the API server`,
		)
		.join('; ')
}

function describeExamined(
	examined: readonly { kind: string; name: string; verdict: string }[],
): string {
	if (examined.length === 0) return 'no policy in the namespace'
	return examined.map((policy) => `${policy.kind} ${policy.name}: ${policy.verdict}`).join(', ')
}

/** The bound pod never carried a label egress selects by (profile, per-sandbox); it was released. */
export class KubernetesPodLabelNotObservedError extends SandboxError<'pod-label-not-observed'> {
	override readonly name = 'KubernetesPodLabelNotObservedError'
	readonly podName: string
	readonly labelKey: string
	readonly expected: string
	readonly observed: string | undefined

	constructor(podName: string, labelKey: string, expected: string, observed: string | undefined) {
		super(
			`egress pod label refused: pod ${podName} does not carry ${labelKey}=${expected} (found ${observed === undefined ? 'no such label' : JSON.stringify(observed)}); an unlabelled pod would run under whatever policy selects it, so the claim was released`,
			'pod-label-not-observed',
		)
		this.podName = podName
		this.labelKey = labelKey
		this.expected = expected
		this.observed = observed
	}
}

/**
 * Never thrown on its own: the `cause` of a `claim-rejected` acquire the controller refused for its
 * metadata (`InvalidMetadata`), carrying what this backend asked for and the key to move.
 */
export class KubernetesPodLabelsRejectedError extends SandboxError<'pod-labels-rejected'> {
	override readonly name = 'KubernetesPodLabelsRejectedError'
	readonly requestedPodLabels: Readonly<Record<string, string>>
	readonly profileLabelKey: string | undefined

	constructor(
		requestedPodLabels: Readonly<Record<string, string>>,
		profileLabelKey: string | undefined,
	) {
		super(
			`pod labels refused by the controller: ${JSON.stringify(requestedPodLabels)}${profileLabelKey === undefined ? '' : `; list the domain of ${profileLabelKey} in allowed-label-domains of the controller's agent-sandbox-config ConfigMap, or set egress.profileLabelKey to an allowed key`}`,
			'pod-labels-rejected',
		)
		this.requestedPodLabels = requestedPodLabels
		this.profileLabelKey = profileLabelKey
	}
}
