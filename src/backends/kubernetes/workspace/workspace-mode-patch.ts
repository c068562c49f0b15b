/**
 * The one write a workspace makes besides its POST and its DELETE: a merge patch of
 * `spec.operatingMode` with the `sandbox.namzu.ai/operating-mode-changed-at` annotation stamped
 * to the moment (ISO 8601). The bodies are pure; `patchOperatingMode` sends the unfenced one, and
 * a holder epoch's JSON-patch form (`operatingModeJsonPatch`) goes through fenced-write.ts.
 */
import type { JsonPatchOperation } from '../api/kubernetes-client.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import { type KubernetesObject, kubernetesPaths } from '../kubernetes-objects.js'
import { annotationAddOps, epochGuardOps, HOLDER_EPOCH_ANNOTATION } from './holder-epoch.js'

export const OPERATING_MODE_CHANGED_AT = 'sandbox.namzu.ai/operating-mode-changed-at'

export type OperatingMode = 'Running' | 'Suspended'

export function operatingModePatch(mode: OperatingMode, atMs: number): object {
	return {
		metadata: { annotations: { [OPERATING_MODE_CHANGED_AT]: new Date(atMs).toISOString() } },
		spec: { operatingMode: mode },
	}
}

/**
 * The same change under holder epoch `epoch`, against the object as `read`: the guard on the epoch
 * that read saw, the two annotations, then the mode (`add`: `spec.operatingMode` may be absent).
 */
export function operatingModeJsonPatch(
	read: KubernetesObject,
	mode: OperatingMode,
	atMs: number,
	epoch: number,
): JsonPatchOperation[] {
	return [
		...epochGuardOps(read),
		...annotationAddOps(read, {
			[OPERATING_MODE_CHANGED_AT]: new Date(atMs).toISOString(),
			[HOLDER_EPOCH_ANNOTATION]: String(epoch),
		}),
		{ op: 'add', path: '/spec/operatingMode', value: mode },
	]
}

/** `spec.operatingMode` as read; the CRD default (`Running`) when unset. */
export function operatingModeOf(sandbox: KubernetesObject): OperatingMode {
	return sandbox.spec?.operatingMode === 'Suspended' ? 'Suspended' : 'Running'
}

export function patchOperatingMode(
	api: KubernetesApiPort,
	namespace: string,
	name: string,
	mode: OperatingMode,
	atMs: number,
	signal?: AbortSignal,
): Promise<KubernetesObject> {
	return api.mergePatch(kubernetesPaths.sandbox(namespace, name), operatingModePatch(mode, atMs), {
		...(signal ? { signal } : {}),
	})
}
