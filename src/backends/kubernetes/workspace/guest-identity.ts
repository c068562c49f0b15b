/**
 * Who a workspace's guest is: the `Sandbox` object (its uid — the same name can be a different
 * object with an empty disk), the claims its disk lives on, the pod, and the agent process inside
 * it (`guestBootId`, absent against a guest that stamps none). The claims' uids are read with PVC
 * GETs; a Role without `get` on `persistentvolumeclaims` leaves that map empty and is no failure.
 */
import { KubernetesApiError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { KubernetesObject } from '../kubernetes-objects.js'

/** One guest: the pod, and the agent process in it when it said which. */
export interface KubernetesGuestRef {
	readonly podUid: string
	/** Only when that agent process stamped one, and only ever one that ran in `podUid`. */
	readonly guestBootId?: string
}

/** `KubernetesWorkspace.identity`. */
export interface KubernetesWorkspaceIdentity {
	readonly sandboxUid: string
	/** PVC name → uid, for each claim of the Sandbox's `volumeClaimTemplates` that could be read. */
	readonly volumeClaimUids: Readonly<Record<string, string>>
	readonly podUid: string
	readonly guestBootId?: string
}

/** Bound on each PVC read. */
const CLAIM_READ_TIMEOUT_MS = 5_000

export function persistentVolumeClaimPath(namespace: string, name: string): string {
	return `/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}`
}

/** The controller names one claim per template entry `<entry name>-<Sandbox name>`. */
export function volumeClaimNames(sandbox: KubernetesObject): readonly string[] {
	const name = sandbox.metadata.name
	const templates = (sandbox.spec as { volumeClaimTemplates?: unknown } | undefined)
		?.volumeClaimTemplates
	if (typeof name !== 'string' || !Array.isArray(templates)) return []
	const names: string[] = []
	for (const entry of templates) {
		const entryName = (entry as { metadata?: { name?: unknown } } | null)?.metadata?.name
		if (typeof entryName === 'string' && entryName !== '') names.push(`${entryName}-${name}`)
	}
	return names
}

/** True for the answer a Role without the verb gets (403), or a claim not there (404). */
function isUnreadable(error: unknown): boolean {
	return error instanceof KubernetesApiError && (error.status === 403 || error.status === 404)
}

/**
 * Each claim's uid; a forbidden or missing claim is left out. Any other failure rejects: the
 * caller decides whether identity is worth failing for.
 */
export async function readVolumeClaimUids(
	api: KubernetesApiPort,
	namespace: string,
	sandbox: KubernetesObject,
	signal?: AbortSignal,
): Promise<Readonly<Record<string, string>>> {
	const uids: Record<string, string> = {}
	for (const name of volumeClaimNames(sandbox)) {
		const bound = AbortSignal.timeout(CLAIM_READ_TIMEOUT_MS)
		try {
			const claim = await api.get(persistentVolumeClaimPath(namespace, name), {
				signal: signal ? AbortSignal.any([signal, bound]) : bound,
			})
			if (typeof claim.metadata.uid === 'string') uids[name] = claim.metadata.uid
		} catch (error) {
			if (isUnreadable(error)) continue
			throw error
		}
	}
	return uids
}
