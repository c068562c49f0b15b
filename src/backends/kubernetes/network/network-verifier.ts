/**
 * The network checks of one backend, at the points the acquire calls them (before a direct POST,
 * after a claim binds), in order: the named egress object, exactly, once per backend (a failure is
 * not remembered, so fixing the cluster and creating again retries it); then one LIST of the
 * namespace's policies feeding the egress union check (a pass cached per pod label set for at most
 * five minutes, a failure never) and the ingress check of the agent port. Each is skipped only by
 * its own switch: no `egress`, `egress.verify: 'named-object-only'`, `ingress: 'unverified'`.
 */
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import { checkHosts, type ResolvedEgressConfig } from './egress-config.js'
import { type TranslatedEgressPolicy, translateEgressPolicy } from './egress-translation.js'
import { decideEgressUnion } from './egress-union.js'
import type { ResolvedIngressConfig } from './ingress-config.js'
import { decideIngressCoverage } from './ingress-coverage.js'
import {
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesIngressPolicyError,
} from './network-errors.js'
import { firstDifference } from './policy-difference.js'
import { getPolicy, type ListedPolicies, listPolicies } from './policy-listing.js'

/** How long a passing union check is trusted for one pod label set. */
export const UNION_PASS_TTL_MS = 5 * 60_000

export interface NetworkVerifierOptions {
	readonly api: KubernetesApiPort
	readonly namespace: string
	readonly sandboxTemplateName: string
	readonly agentPort: number
	readonly egress?: ResolvedEgressConfig
	readonly ingress: ResolvedIngressConfig
	readonly now?: () => number
}

/** A policy LIST started before the labels it is judged against were known. */
export interface PolicyListingAhead {
	/** Whether it also lists CiliumNetworkPolicies. */
	readonly cilium: boolean
	readonly listing: Promise<ListedPolicies>
}

function labelSetKey(labels: Readonly<Record<string, string>>): string {
	return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

export class KubernetesNetworkVerifier {
	readonly #options: NetworkVerifierOptions
	readonly #now: () => number
	#named: Promise<TranslatedEgressPolicy> | undefined
	readonly #unionPasses = new Map<string, number>()

	constructor(options: NetworkVerifierOptions) {
		this.#options = options
		this.#now = options.now ?? (() => Date.now())
	}

	/** Whether any check runs at all (a backend with none issues no policy request). */
	get active(): boolean {
		return this.#options.egress !== undefined || this.#options.ingress.verify
	}

	/**
	 * The named egress object, before anything is created (a no-op without `egress`, and once a
	 * pass is remembered).
	 */
	async prepare(signal?: AbortSignal): Promise<void> {
		const { egress } = this.#options
		if (egress !== undefined) await this.#namedObject(egress, signal)
	}

	/**
	 * Starts, before the bound pod's labels are known, the policy LIST a `verify` will need when
	 * the ingress check is on (it always lists). `verify` uses it only when it would have listed
	 * the very same collections; otherwise it lists itself.
	 */
	listAhead(signal?: AbortSignal): PolicyListingAhead | undefined {
		const { ingress, api, namespace } = this.#options
		if (!ingress.verify) return undefined
		const cilium = ingress.engine === 'cilium'
		const listing = listPolicies(api, namespace, cilium, signal)
		// Awaited by verify, or dropped when the acquire ended first.
		listing.catch(() => {})
		return { cilium, listing }
	}

	/** Every check for a pod carrying `podLabels`; throws the first refusal. */
	async verify(
		podLabels: Readonly<Record<string, string>>,
		signal?: AbortSignal,
		ahead?: PolicyListingAhead,
	): Promise<void> {
		const { egress, ingress, namespace, api } = this.#options
		const translated = egress === undefined ? undefined : await this.#namedObject(egress, signal)
		const key = labelSetKey(podLabels)
		const union =
			egress !== undefined && translated !== undefined && egress.verify === 'union'
				? !this.#passCached(key)
				: false
		if (!union && !ingress.verify) return
		const cilium =
			(union && egress?.engine === 'cilium') || (ingress.verify && ingress.engine === 'cilium')
		const listed =
			ahead?.cilium === cilium
				? await ahead.listing
				: await listPolicies(api, namespace, cilium, signal)
		if (union && translated !== undefined) {
			const decision = decideEgressUnion({
				policies: listed.policies,
				podLabels,
				namespace,
				allowance: translated.allowance,
				unread: listed.unread,
			})
			if (!decision.pass) {
				throw new KubernetesEgressPolicyUnionError({
					refusal: decision.refusal,
					namespace,
					podLabels,
					examined: decision.examined,
					unread: listed.unread,
				})
			}
		}
		if (ingress.verify) {
			const decision = decideIngressCoverage({
				policies: listed.policies,
				podLabels,
				namespace,
				agentPort: this.#options.agentPort,
				unread: listed.unread,
			})
			if (!decision.pass) {
				throw new KubernetesIngressPolicyError({
					refusal: decision.refusal,
					namespace,
					podLabels,
					port: this.#options.agentPort,
					examined: decision.examined,
					unread: listed.unread,
				})
			}
		}
		if (union) this.#unionPasses.set(key, this.#now() + UNION_PASS_TTL_MS)
	}

	#passCached(key: string): boolean {
		const until = this.#unionPasses.get(key)
		if (until === undefined) return false
		if (this.#now() < until) return true
		this.#unionPasses.delete(key)
		return false
	}

	#namedObject(
		egress: ResolvedEgressConfig,
		signal?: AbortSignal,
	): Promise<TranslatedEgressPolicy> {
		this.#named ??= this.#verifyNamed(egress, signal).catch((error: unknown) => {
			this.#named = undefined
			throw error
		})
		return this.#named
	}

	async #verifyNamed(
		egress: ResolvedEgressConfig,
		signal?: AbortSignal,
	): Promise<TranslatedEgressPolicy> {
		const { api, namespace, sandboxTemplateName } = this.#options
		let hosts: readonly string[] = []
		if (egress.policy.kind === 'static') hosts = egress.policy.allowedHosts
		if (egress.policy.kind === 'resolver') {
			hosts = checkHosts('policy.resolve()', await egress.policy.resolve())
		}
		const translated = translateEgressPolicy(egress, sandboxTemplateName, hosts)
		const applied = await getPolicy(api, namespace, translated.kind, translated.name, signal)
		if (applied === undefined) {
			throw new KubernetesEgressPolicyNotAppliedError(translated.kind, translated.name, namespace)
		}
		const difference = firstDifference(translated.spec, applied.spec, 'spec')
		if (difference !== undefined) {
			throw new KubernetesEgressPolicyMismatchError({
				policyKind: translated.kind,
				policyName: translated.name,
				...difference,
			})
		}
		return translated
	}
}
