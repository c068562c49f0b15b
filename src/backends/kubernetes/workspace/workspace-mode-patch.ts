/**
 * The one write a workspace makes besides its POST and its DELETE: a merge patch of
 * `spec.operatingMode` with the `sandbox.namzu.ai/operating-mode-changed-at` annotation stamped
 * to the moment (ISO 8601). The body is pure; `patchOperatingMode` sends it.
 */
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import { type KubernetesObject, kubernetesPaths } from '../kubernetes-objects.js'

export const OPERATING_MODE_CHANGED_AT = 'sandbox.namzu.ai/operating-mode-changed-at'

export type OperatingMode = 'Running' | 'Suspended'

export function operatingModePatch(mode: OperatingMode, atMs: number): object {
	return {
		metadata: { annotations: { [OPERATING_MODE_CHANGED_AT]: new Date(atMs).toISOString() } },
		spec: { operatingMode: mode },
	}
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
