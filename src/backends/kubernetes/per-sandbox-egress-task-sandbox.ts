/**
 * The task handle of a backend configured with `egress.perSandbox`: the plain task handle plus
 * `setNetworkPolicy`, which writes (or, for `[]`, deletes) this sandbox's own CiliumNetworkPolicy
 * (network/per-sandbox-policy-writer.ts). A separate class so that without the option the method
 * is absent from the handle rather than present and refusing.
 */
import type { SandboxNetworkPolicy } from '../../contract/sandbox.js'
import {
	KubernetesTaskSandbox,
	type KubernetesTaskSandboxOptions,
} from './kubernetes-task-sandbox.js'
import type { PerSandboxPolicyWriter } from './network/per-sandbox-policy-writer.js'

export interface KubernetesPerSandboxEgressTaskSandboxOptions extends KubernetesTaskSandboxOptions {
	readonly policyWriter: PerSandboxPolicyWriter
}

export class KubernetesPerSandboxEgressTaskSandbox extends KubernetesTaskSandbox {
	readonly #writer: PerSandboxPolicyWriter

	/** @internal The provider builds it. */
	constructor(options: KubernetesPerSandboxEgressTaskSandboxOptions) {
		super(options)
		this.#writer = options.policyWriter
	}

	/**
	 * Replaces this sandbox's allowlist; resolves once the written policy read back equal to what
	 * was sent. Policies union: this adds to whatever `egress.policy` allows.
	 */
	async setNetworkPolicy(policy: SandboxNetworkPolicy): Promise<void> {
		this.admit('setNetworkPolicy')
		await this.#writer.set(policy)
	}
}
