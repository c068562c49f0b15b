/**
 * The admission fence a per-sandbox policy write needs: the ValidatingAdmissionPolicy of
 * `validatingadmissionpolicy-cilium.yaml` and its binding, both cluster-scoped, proven applied by
 * one GET each before the backend's first write. A 404 is a missing fence, a 401/403 a host that
 * may not look (most often the Role applied without the ClusterRole); anything else travels as
 * itself. A pass is remembered for the backend, a failure never (fixing the cluster and calling
 * again retries it).
 */
import { KubernetesApiError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import {
	KubernetesAdmissionFenceMissingError,
	type KubernetesAdmissionFenceObject,
	KubernetesAdmissionFenceUnreadableError,
} from './per-sandbox-errors.js'

/** The name both shipped admission objects carry. */
export const ADMISSION_FENCE_NAME = 'namzu-sandbox-per-sandbox-egress'

const ADMISSION_API = '/apis/admissionregistration.k8s.io/v1'

export const admissionFencePaths: Readonly<Record<KubernetesAdmissionFenceObject, string>> = {
	ValidatingAdmissionPolicy: `${ADMISSION_API}/validatingadmissionpolicies/${ADMISSION_FENCE_NAME}`,
	ValidatingAdmissionPolicyBinding: `${ADMISSION_API}/validatingadmissionpolicybindings/${ADMISSION_FENCE_NAME}`,
}

/** What a failed fence read means: `missing`, `unreadable` (with its status), or itself. */
export function fenceReadRefusal(
	kind: KubernetesAdmissionFenceObject,
	error: unknown,
): Error | undefined {
	if (!(error instanceof KubernetesApiError) || error.status === undefined) return undefined
	if (error.status === 404) {
		return new KubernetesAdmissionFenceMissingError(kind, ADMISSION_FENCE_NAME, { cause: error })
	}
	if (error.status === 401 || error.status === 403) {
		return new KubernetesAdmissionFenceUnreadableError(kind, ADMISSION_FENCE_NAME, error.status, {
			cause: error,
		})
	}
	return undefined
}

export class AdmissionFence {
	readonly #api: KubernetesApiPort
	#proven: Promise<void> | undefined

	constructor(api: KubernetesApiPort) {
		this.#api = api
	}

	/** Resolves once both objects were read; rejects with the first refusal. */
	prove(signal?: AbortSignal): Promise<void> {
		if (!this.#proven) {
			const proving = this.#read(signal)
			this.#proven = proving
			proving.catch(() => {
				if (this.#proven === proving) this.#proven = undefined
			})
		}
		return this.#proven
	}

	async #read(signal?: AbortSignal): Promise<void> {
		for (const kind of Object.keys(admissionFencePaths) as KubernetesAdmissionFenceObject[]) {
			try {
				await this.#api.get(admissionFencePaths[kind], { ...(signal ? { signal } : {}) })
			} catch (error) {
				throw fenceReadRefusal(kind, error) ?? error
			}
		}
	}
}
