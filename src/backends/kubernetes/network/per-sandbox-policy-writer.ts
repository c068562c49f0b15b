/**
 * `setNetworkPolicy` of one task sandbox, in order, each step before the next: the allowlist's
 * grammar and the translation's refusals (nothing sent), the owner's uid, the admission fence
 * (admission-fence.ts); then a POST of `namzu-sbx-<uid>` — on 409 the replacement merge-patch of
 * its `spec` — and a read-back that must deep-equal what was sent (the named-object comparator), or
 * for `[]` one DELETE of that object alone. Calls on one sandbox run one at a time, so two lists
 * never interleave their writes.
 */
import { callSite, requireObject } from '../../../contract/argument-validators.js'
import type { SandboxNetworkPolicy } from '../../../contract/sandbox.js'
import { KubernetesApiError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { KubernetesObjectMeta } from '../kubernetes-objects.js'
import type { AdmissionFence } from './admission-fence.js'
import { KubernetesEgressPolicyMismatchError } from './network-errors.js'
import type { ResolvedPerSandboxEgress } from './per-sandbox-config.js'
import { KubernetesOwnerUidMissingError } from './per-sandbox-errors.js'
import { canonicalAllowedHosts } from './per-sandbox-hosts.js'
import {
	type PerSandboxPolicyOwner,
	perSandboxPolicyName,
	perSandboxPolicyObject,
	perSandboxSelector,
} from './per-sandbox-policy-object.js'
import { translatePerSandboxEgress } from './per-sandbox-translation.js'
import { firstDifference } from './policy-difference.js'
import { policyPaths } from './policy-listing.js'

const SITE = callSite('setNetworkPolicy')

export interface PerSandboxPolicyWriterOptions {
	readonly api: KubernetesApiPort
	readonly namespace: string
	readonly perSandbox: ResolvedPerSandboxEgress
	/** Shared by the backend's sandboxes: proven once. */
	readonly fence: AdmissionFence
	readonly sandboxId: string
	/** What this backend created; `uid` absent when the create's answer carried none. */
	readonly owner: Omit<PerSandboxPolicyOwner, 'uid'> & { readonly uid: string | undefined }
}

/** The allowlist of a `setNetworkPolicy` argument, canonical; throws before anything is sent. */
export function readAllowedHosts(policy: unknown): string[] {
	const given = requireObject(SITE, 'policy', policy)
	const hosts = given.allowedHosts
	if (!Array.isArray(hosts)) {
		throw SITE.refuse('policy.allowedHosts', 'an array of hostnames', typeof hosts)
	}
	return canonicalAllowedHosts(hosts)
}

export class PerSandboxPolicyWriter {
	readonly #options: PerSandboxPolicyWriterOptions
	#queue: Promise<unknown> = Promise.resolve()

	constructor(options: PerSandboxPolicyWriterOptions) {
		this.#options = options
	}

	set(policy: SandboxNetworkPolicy, signal?: AbortSignal): Promise<void> {
		const run = this.#queue.then(
			() => this.#set(policy, signal),
			() => this.#set(policy, signal),
		)
		this.#queue = run.catch(() => {})
		return run
	}

	async #set(policy: SandboxNetworkPolicy, signal?: AbortSignal): Promise<void> {
		signal?.throwIfAborted()
		const { api, namespace, perSandbox, fence, owner } = this.#options
		const hosts = readAllowedHosts(policy)
		const spec =
			hosts.length === 0
				? undefined
				: translatePerSandboxEgress(
						hosts,
						perSandbox.narrowing,
						perSandboxSelector(perSandbox.labelKey, owner.name),
					)
		const uid = owner.uid
		if (uid === undefined || uid === '') {
			throw new KubernetesOwnerUidMissingError(this.#options.sandboxId, owner.name)
		}
		await fence.prove(signal)
		const options = signal ? { signal } : {}
		const name = perSandboxPolicyName(uid)
		const path = policyPaths.policy(namespace, 'CiliumNetworkPolicy', name)
		if (spec === undefined) {
			await api.delete(path, options)
			return
		}
		const body = perSandboxPolicyObject(namespace, { ...owner, uid }, spec)
		try {
			await api.create(policyPaths.ciliumPolicies(namespace), body, options)
		} catch (error) {
			if (!(error instanceof KubernetesApiError) || error.status !== 409) throw error
			await api.mergePatch(path, { spec }, options)
		}
		const read = await api.get(path, options)
		const difference =
			firstDifference(spec, read.spec, 'spec') ??
			firstDifference(body.metadata, pickMetadata(read.metadata), 'metadata')
		if (difference) {
			throw new KubernetesEgressPolicyMismatchError({
				policyKind: 'CiliumNetworkPolicy',
				policyName: name,
				...difference,
			})
		}
	}
}

/** The metadata fields this backend writes, as read back (the server adds the rest). */
function pickMetadata(metadata: KubernetesObjectMeta): Record<string, unknown> {
	return {
		name: metadata.name,
		namespace: metadata.namespace,
		ownerReferences: metadata.ownerReferences,
	}
}
