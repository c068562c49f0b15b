/**
 * The whole per-sandbox CiliumNetworkPolicy, pure: named `namzu-sbx-<owner uid>`, owned by the
 * SandboxClaim (or Sandbox) this backend created — no `blockOwnerDeletion`, so the host needs no
 * finalizer rights and deleting the owner lets the garbage collector take it — and selecting the
 * one per-sandbox pod label whose value is the owner's name. The shipped admission policy admits
 * exactly this shape.
 */
import { CILIUM_POLICY_API_VERSION } from './egress-translation.js'

export const PER_SANDBOX_POLICY_NAME_PREFIX = 'namzu-sbx-'

/** The object this backend created for the sandbox, as its `ownerReferences` entry names it. */
export interface PerSandboxPolicyOwner {
	readonly apiVersion: string
	readonly kind: 'SandboxClaim' | 'Sandbox'
	readonly name: string
	readonly uid: string
}

export function perSandboxPolicyName(ownerUid: string): string {
	return `${PER_SANDBOX_POLICY_NAME_PREFIX}${ownerUid}`
}

/** The one label the policy selects and the pod carries. */
export function perSandboxSelector(
	labelKey: string,
	ownerName: string,
): Readonly<Record<string, string>> {
	return { [labelKey]: ownerName }
}

export function perSandboxOwnerReferences(owner: PerSandboxPolicyOwner): Record<string, unknown>[] {
	return [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid }]
}

export function perSandboxPolicyObject(
	namespace: string,
	owner: PerSandboxPolicyOwner,
	spec: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
	return {
		apiVersion: CILIUM_POLICY_API_VERSION,
		kind: 'CiliumNetworkPolicy',
		metadata: {
			name: perSandboxPolicyName(owner.uid),
			namespace,
			ownerReferences: perSandboxOwnerReferences(owner),
		},
		spec,
	}
}
