/**
 * The disk rule of a workspace, as a pure check of a blueprint (a `SandboxTemplate`'s spec, or an
 * adopted `Sandbox`'s): at least one `volumeClaimTemplates` entry, every entry `volumeMode: Block`,
 * and every entry consumed by some container through `volumeDevices` — never `volumeMounts`, which
 * would make it a Filesystem disk. The first violation throws `KubernetesWorkspaceDiskError`.
 */
import { isRecord } from '../../../common/is-record.js'
import { KubernetesWorkspaceDiskError } from './workspace-errors.js'

export function records(value: unknown): Record<string, unknown>[] {
	return Array.isArray(value) ? value.filter(isRecord) : []
}

/** The names a pod spec's containers (init containers too) consume through `volumeDevices`. */
export function deviceVolumeNames(podSpec: Record<string, unknown> | undefined): Set<string> {
	const names = new Set<string>()
	for (const key of ['containers', 'initContainers']) {
		for (const container of records(podSpec?.[key])) {
			for (const device of records(container.volumeDevices)) {
				if (typeof device.name === 'string') names.add(device.name)
			}
		}
	}
	return names
}

/** The `metadata.name`s of a blueprint's `volumeClaimTemplates` entries. */
export function claimNames(spec: unknown): string[] {
	const blueprint = isRecord(spec) ? spec : {}
	return records(blueprint.volumeClaimTemplates).flatMap((claim) => {
		const meta = isRecord(claim.metadata) ? claim.metadata : {}
		return typeof meta.name === 'string' ? [meta.name] : []
	})
}

/** Throws `KubernetesWorkspaceDiskError` unless `spec` declares a block disk in every entry. */
export function checkWorkspaceDisk(objectName: string, spec: unknown): void {
	const blueprint = isRecord(spec) ? spec : {}
	const claims = Array.isArray(blueprint.volumeClaimTemplates) ? blueprint.volumeClaimTemplates : []
	if (claims.length === 0)
		throw new KubernetesWorkspaceDiskError(objectName, 'no-volume-claim-templates')
	const podTemplate = isRecord(blueprint.podTemplate) ? blueprint.podTemplate : undefined
	const devices = deviceVolumeNames(isRecord(podTemplate?.spec) ? podTemplate.spec : undefined)
	for (const entry of claims) {
		const claim = isRecord(entry) ? entry : {}
		const meta = isRecord(claim.metadata) ? claim.metadata : {}
		const claimName = typeof meta.name === 'string' ? meta.name : undefined
		const claimSpec = isRecord(claim.spec) ? claim.spec : {}
		const mode = typeof claimSpec.volumeMode === 'string' ? claimSpec.volumeMode : 'Filesystem'
		if (mode !== 'Block') {
			throw new KubernetesWorkspaceDiskError(objectName, 'not-block', {
				...(claimName === undefined ? {} : { claimName }),
				volumeMode: mode,
			})
		}
		if (claimName === undefined || !devices.has(claimName)) {
			throw new KubernetesWorkspaceDiskError(objectName, 'not-consumed-as-device', {
				...(claimName === undefined ? {} : { claimName }),
			})
		}
	}
}
