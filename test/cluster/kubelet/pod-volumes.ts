/**
 * Which volume backs each of a container's `volumeMounts` and `volumeDevices`. Pure.
 * A PersistentVolumeClaim outlives the pod: a filesystem-mode claim is a directory (bound at
 * `mountPath`, or at `devicePath` for a `volumeDevices` entry), a block-mode claim a loop device
 * (its node bound at `devicePath`) — which one is the claim's `volumeMode`, known only to the
 * PVC store. An `emptyDir` is a directory that lives as long as the pod. Every other volume source
 * (configMap, secret, projected, hostPath, …) is reported as ignored and not mounted.
 */
import type { Container, Pod } from './kube-types.js'

export type VolumeNeed =
	| {
			readonly kind: 'pvc'
			readonly volume: string
			readonly claimName: string
			readonly target: string
			readonly readOnly: boolean
			/** From `volumeMounts` (a mounted filesystem) or `volumeDevices` (a raw device). */
			readonly use: 'mount' | 'device'
	  }
	| { readonly kind: 'emptyDir'; readonly volume: string; readonly target: string }

export interface VolumePlan {
	readonly needs: readonly VolumeNeed[]
	/** Mounts whose volume is missing or of a source the process kubelet does not emulate. */
	readonly ignored: readonly string[]
}

export function planVolumes(pod: Pod, container: Container): VolumePlan {
	const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]))
	const needs: VolumeNeed[] = []
	const ignored: string[] = []
	const uses = [
		...(container.volumeMounts ?? []).map((m) => ({
			name: m.name,
			target: m.mountPath,
			readOnly: m.readOnly ?? false,
			subPath: m.subPath,
			use: 'mount' as const,
		})),
		...(container.volumeDevices ?? []).map((d) => ({
			name: d.name,
			target: d.devicePath,
			readOnly: false,
			subPath: undefined,
			use: 'device' as const,
		})),
	]
	for (const use of uses) {
		const volume = volumes.get(use.name)
		if (volume === undefined || !use.target.startsWith('/') || use.subPath) {
			ignored.push(use.name)
		} else if (volume.persistentVolumeClaim !== undefined) {
			needs.push({
				kind: 'pvc',
				volume: use.name,
				claimName: volume.persistentVolumeClaim.claimName,
				target: use.target,
				readOnly: use.readOnly || (volume.persistentVolumeClaim.readOnly ?? false),
				use: use.use,
			})
		} else if (volume.emptyDir !== undefined) {
			needs.push({ kind: 'emptyDir', volume: use.name, target: use.target })
		} else {
			ignored.push(use.name)
		}
	}
	return { needs, ignored }
}

/** Claim names a pod references (in any volume, mounted or not). */
export function claimNames(pod: Pod): string[] {
	const names = new Set<string>()
	for (const volume of pod.spec.volumes ?? []) {
		if (volume.persistentVolumeClaim) names.add(volume.persistentVolumeClaim.claimName)
	}
	return [...names]
}
