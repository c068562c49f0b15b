/**
 * The walk both decisions (egress union, ingress coverage) share over the listed policies: a
 * policy that could not be read is `not-evaluable` (whether it selects the pod cannot be known), a
 * policy whose selector does not match the pod's real labels is `not-selecting` — never by name —
 * and every other policy is judged by the caller. Pure.
 */
import { selectorMatches } from './label-selector.js'
import type { KubernetesPolicyKind } from './network-errors.js'
import type { ModelledPolicy, ReadPolicy } from './policy-model.js'

/** The pseudo-label Cilium matches a pod's namespace by. */
export const CILIUM_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace'

/** Labels a policy of either engine is matched against: Cilium also sees the namespace. */
export function labelsFor(
	policy: ModelledPolicy,
	podLabels: Readonly<Record<string, string>>,
	namespace: string,
): Readonly<Record<string, string>> {
	return policy.kind === 'CiliumNetworkPolicy'
		? { ...podLabels, [CILIUM_NAMESPACE_LABEL]: namespace }
		: podLabels
}

export interface Examined<V extends string> {
	readonly kind: KubernetesPolicyKind
	readonly name: string
	readonly verdict: V | 'not-evaluable' | 'not-selecting'
	readonly detail?: string
}

/** One entry per policy, in list order; `judge` sees only readable policies selecting the pod. */
export function examinePolicies<V extends string>(
	policies: readonly ReadPolicy[],
	podLabels: Readonly<Record<string, string>>,
	namespace: string,
	judge: (policy: ModelledPolicy) => { verdict: V | 'not-evaluable'; detail?: string },
): Examined<V>[] {
	return policies.map((read) => {
		if (!read.ok) {
			return { kind: read.kind, name: read.name, verdict: 'not-evaluable', detail: read.problem }
		}
		const policy = read.policy
		if (!selectorMatches(policy.selector, labelsFor(policy, podLabels, namespace))) {
			return { kind: policy.kind, name: policy.name, verdict: 'not-selecting' }
		}
		const { verdict, detail } = judge(policy)
		return {
			kind: policy.kind,
			name: policy.name,
			verdict,
			...(detail === undefined ? {} : { detail }),
		}
	})
}
