/**
 * Refusals of per-sandbox live egress (`egress.perSandbox`, `setNetworkPolicy` on a task handle):
 * a setting this backend will not act on (thrown while it is built), an allowlist entry it will not
 * translate (before any request), an admission fence that is absent or may not be read (nothing is
 * written in either case), an owner whose uid this backend never learnt, and a workspace config
 * that carries the option. Messages name what was refused; none carries a token.
 */
import { SandboxError } from '../../../contract/errors.js'

/** A value inside `config.egress.perSandbox` this backend will not act on. */
export class KubernetesPerSandboxEgressConfigError extends SandboxError<'invalid-per-sandbox-egress-config'> {
	override readonly name = 'KubernetesPerSandboxEgressConfigError'
	/** Relative to `config.egress`: `perSandbox.engine`, `perSandbox.labelKey`. */
	readonly field: string

	constructor(field: string, problem: string) {
		super(`egress.${field} refused: ${problem}`, 'invalid-per-sandbox-egress-config')
		this.field = field
	}
}

export type KubernetesNetworkPolicyHostProblem =
	| 'not-a-string'
	| 'url'
	| 'port'
	| 'glob'
	| 'ip-address'
	| 'public-suffix'
	| 'not-a-hostname'
	| 'domain-with-tls-server-names'

/** An allowlist entry (or combination) this backend will not turn into a policy; nothing was sent. */
export class KubernetesNetworkPolicyHostError extends SandboxError<'invalid-policy-host'> {
	override readonly name = 'KubernetesNetworkPolicyHostError'
	/** The entry as given (an entry that is not a string is described, never echoed). */
	readonly host: string
	/** Its position in `allowedHosts`; absent for a config-level entry. */
	readonly index: number | undefined
	readonly problem: KubernetesNetworkPolicyHostProblem
	/** What the caller sets to change the outcome: `allowedHosts[2]`, `config.egress.ciliumNarrowing`. */
	readonly field: string

	constructor(fields: {
		host: string
		index?: number
		problem: KubernetesNetworkPolicyHostProblem
		field: string
		detail: string
	}) {
		super(`network policy host refused: ${fields.field}: ${fields.detail}`, 'invalid-policy-host')
		this.host = fields.host
		this.index = fields.index
		this.problem = fields.problem
		this.field = fields.field
	}
}

/** One of the two cluster-scoped admission objects the backend proves before its first write. */
export type KubernetesAdmissionFenceObject =
	| 'ValidatingAdmissionPolicy'
	| 'ValidatingAdmissionPolicyBinding'

/** The admission fence is not applied (404): nothing was written. */
export class KubernetesAdmissionFenceMissingError extends SandboxError<'admission-fence-missing'> {
	override readonly name = 'KubernetesAdmissionFenceMissingError'
	readonly objectKind: KubernetesAdmissionFenceObject
	readonly objectName: string

	constructor(
		objectKind: KubernetesAdmissionFenceObject,
		objectName: string,
		options: { cause?: unknown } = {},
	) {
		super(
			`setNetworkPolicy refused: ${objectKind} ${objectName} is not applied, so nothing bounds what a per-sandbox policy may allow; apply deploy/k8s/manifests/validatingadmissionpolicy-cilium.yaml (nothing was written)`,
			'admission-fence-missing',
			{ cause: options.cause },
		)
		this.objectKind = objectKind
		this.objectName = objectName
	}
}

/** Reading the admission fence was refused (401/403): nothing was written. */
export class KubernetesAdmissionFenceUnreadableError extends SandboxError<'admission-fence-unreadable'> {
	override readonly name = 'KubernetesAdmissionFenceUnreadableError'
	readonly objectKind: KubernetesAdmissionFenceObject
	readonly objectName: string
	readonly status: number

	constructor(
		objectKind: KubernetesAdmissionFenceObject,
		objectName: string,
		status: number,
		options: { cause?: unknown } = {},
	) {
		super(
			`setNetworkPolicy refused: reading ${objectKind} ${objectName} was refused (${status}), so the admission fence cannot be shown applied; apply the ClusterRole and ClusterRoleBinding of deploy/k8s/manifests/rbac-per-sandbox-egress.yaml (nothing was written)`,
			'admission-fence-unreadable',
			{ cause: options.cause },
		)
		this.objectKind = objectKind
		this.objectName = objectName
		this.status = status
	}
}

/** The object this backend created carried no `metadata.uid`, so no policy can be owned by it. */
export class KubernetesOwnerUidMissingError extends SandboxError<'owner-uid-missing'> {
	override readonly name = 'KubernetesOwnerUidMissingError'
	readonly sandboxId: string
	readonly ownerName: string

	constructor(sandboxId: string, ownerName: string) {
		super(
			`setNetworkPolicy refused on sandbox ${sandboxId}: the create of ${ownerName} returned no metadata.uid, so its policy cannot be named after and owned by it (nothing was written)`,
			'owner-uid-missing',
		)
		this.sandboxId = sandboxId
		this.ownerName = ownerName
	}
}

/** `createKubernetesWorkspace` was given `egress.perSandbox`, which a workspace never serves. */
export class KubernetesWorkspacePerSandboxEgressConfigError extends SandboxError<'workspace-per-sandbox-egress'> {
	override readonly name = 'KubernetesWorkspacePerSandboxEgressConfigError'
	readonly field = 'egress.perSandbox'

	constructor() {
		super(
			'egress.perSandbox refused by createKubernetesWorkspace: a workspace has no setNetworkPolicy (only task sandboxes do); pass this call a config without perSandbox (nothing was sent)',
			'workspace-per-sandbox-egress',
		)
	}
}
