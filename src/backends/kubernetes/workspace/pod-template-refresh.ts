/**
 * Waking a workspace onto the current `SandboxTemplate`, as pure pieces: the template revision a
 * create stamps (`sandbox.namzu.ai/pod-template-hash`, a digest of the template's pod template),
 * the two disk refusals decided before anything is sent, and the one JSON patch — `test` that the
 * object is still `Suspended`, the holder-epoch guard when fenced, the annotations, then
 * `/spec/podTemplate` and `/spec/operatingMode` as `add`s (the same write on a member that is
 * there, and the only one that lands on a member that is not). The pod template is replaced
 * wholesale — a merge patch would keep a `nodeSelector` key the template dropped — and
 * `spec.volumeClaimTemplates` is never in the body: it is immutable, and the disk stays.
 */
import { createHash } from 'node:crypto'
import { isRecord } from '../../../common/is-record.js'
import type { JsonPatchOperation } from '../api/kubernetes-client.js'
import type { KubernetesObject } from '../kubernetes-objects.js'
import { annotationAddOps, epochGuardOps, HOLDER_EPOCH_ANNOTATION } from './holder-epoch.js'
import { claimNames, deviceVolumeNames, records } from './workspace-disk.js'
import { KubernetesWorkspaceDiskError } from './workspace-errors.js'
import { OPERATING_MODE_CHANGED_AT } from './workspace-mode-patch.js'

export const POD_TEMPLATE_HASH_ANNOTATION = 'sandbox.namzu.ai/pod-template-hash'

/** JSON with object keys sorted, so equal templates digest alike whatever order they came in. */
function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
	if (isRecord(value)) {
		const keys = Object.keys(value)
			.filter((key) => value[key] !== undefined)
			.sort()
		return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`).join(',')}}`
	}
	return JSON.stringify(value) ?? 'null'
}

/** The revision of a `SandboxTemplate`: 16 hex digits of the SHA-256 of its pod template. */
export function podTemplateHash(template: KubernetesObject): string {
	const podTemplate = isRecord(template.spec?.podTemplate) ? template.spec.podTemplate : {}
	return createHash('sha256').update(canonicalJson(podTemplate)).digest('hex').slice(0, 16)
}

/** The revision a `Sandbox` was built (or last refreshed) from; none before this release. */
export function templateRevisionOf(sandbox: KubernetesObject): string | undefined {
	const value = sandbox.metadata.annotations?.[POD_TEMPLATE_HASH_ANNOTATION]
	return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The disk refusals of a refresh (`KubernetesWorkspaceDiskError`): the template's pod template
 * must still claim every disk the workspace has through `volumeDevices`, and must claim no disk
 * the workspace does not have — a `volumeClaimTemplates` entry, or a `volumeDevices` entry naming
 * neither a stored claim nor a pod volume of its own.
 */
export function checkRefreshDisk(
	templateName: string,
	templateSpec: unknown,
	sandboxSpec: unknown,
): void {
	const stored = new Set(claimNames(sandboxSpec))
	const template = isRecord(templateSpec) ? templateSpec : {}
	const podTemplate = isRecord(template.podTemplate) ? template.podTemplate : {}
	const podSpec = isRecord(podTemplate.spec) ? podTemplate.spec : undefined
	const devices = deviceVolumeNames(podSpec)
	for (const claimName of stored) {
		if (!devices.has(claimName)) {
			throw new KubernetesWorkspaceDiskError(templateName, 'refresh-drops-disk', { claimName })
		}
	}
	for (const claimName of claimNames(templateSpec)) {
		if (!stored.has(claimName)) {
			throw new KubernetesWorkspaceDiskError(templateName, 'refresh-adds-disk', { claimName })
		}
	}
	const podVolumes = new Set(
		records(podSpec?.volumes).flatMap((volume) =>
			typeof volume.name === 'string' ? [volume.name] : [],
		),
	)
	for (const device of devices) {
		if (!stored.has(device) && !podVolumes.has(device)) {
			throw new KubernetesWorkspaceDiskError(templateName, 'refresh-adds-disk', {
				claimName: device,
			})
		}
	}
}

export interface RefreshPatchInput {
	/** The object as read (its annotations decide how they are added, its epoch the guard). */
	readonly read: KubernetesObject
	/** The pod template to write, built from the current template as a create would build it. */
	readonly podTemplate: unknown
	readonly templateHash: string
	readonly atMs: number
	/** The holder epoch the write carries; none: no guard and no epoch annotation. */
	readonly epoch?: number
}

/** The refresh patch; see the module comment for the order. */
export function refreshPatch(input: RefreshPatchInput): JsonPatchOperation[] {
	const { read, epoch } = input
	return [
		{ op: 'test', path: '/spec/operatingMode', value: 'Suspended' },
		...(epoch === undefined ? [] : epochGuardOps(read)),
		...annotationAddOps(read, {
			[OPERATING_MODE_CHANGED_AT]: new Date(input.atMs).toISOString(),
			[POD_TEMPLATE_HASH_ANNOTATION]: input.templateHash,
			...(epoch === undefined ? {} : { [HOLDER_EPOCH_ANNOTATION]: String(epoch) }),
		}),
		{ op: 'add', path: '/spec/podTemplate', value: input.podTemplate },
		{ op: 'add', path: '/spec/operatingMode', value: 'Running' },
	]
}
