/**
 * What an adopted object must agree on before it is woken or dialed, as one pure check: a block
 * disk (workspace-disk.ts), the `sandbox.namzu.ai/template` label of this call's template on its
 * pod template (a policy's `podSelector` matches that label, egress configured or not), — when
 * a RuntimeClass is required — that class (the privilege probe cannot see a missing VM boundary),
 * and — when an egress profile is configured — its label there too: the profile's policy selects
 * on it, so a pod without it would run under whatever policy still selects it.
 */
import { isRecord } from '../../../common/is-record.js'
import { type KubernetesObject, TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { checkWorkspaceDisk } from './workspace-disk.js'
import {
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
} from './workspace-errors.js'

export interface EgressProfileLabel {
	readonly key: string
	readonly value: string
}

export interface AdoptExpectations {
	readonly templateName: string
	readonly runtimeClassName?: string
	readonly egressProfile?: EgressProfileLabel
}

function podTemplateLabels(object: KubernetesObject): Record<string, unknown> {
	const podTemplate = isRecord(object.spec?.podTemplate) ? object.spec.podTemplate : {}
	const meta = isRecord(podTemplate.metadata) ? podTemplate.metadata : {}
	return isRecord(meta.labels) ? meta.labels : {}
}

/** Throws `KubernetesWorkspaceMismatchError` (`egressProfile`) when the pod template lacks it. */
export function checkEgressProfile(object: KubernetesObject, profile: EgressProfileLabel): void {
	const actual = podTemplateLabels(object)[profile.key]
	if (actual === profile.value) return
	throw new KubernetesWorkspaceMismatchError(
		object.metadata.name ?? '(unnamed)',
		'egressProfile',
		`${profile.key}=${profile.value}`,
		typeof actual === 'string' ? `${profile.key}=${actual}` : undefined,
	)
}

/** Throws `KubernetesWorkspaceMismatchError` naming the first field that disagrees. */
export function checkAdoptedWorkspace(object: KubernetesObject, expected: AdoptExpectations): void {
	const name = object.metadata.name ?? '(unnamed)'
	try {
		checkWorkspaceDisk(name, object.spec)
	} catch (error) {
		if (!(error instanceof KubernetesWorkspaceDiskError)) throw error
		throw new KubernetesWorkspaceMismatchError(
			name,
			'disk',
			'a Block volumeClaimTemplates disk',
			error.problem,
			{
				cause: error,
			},
		)
	}
	const podTemplate = isRecord(object.spec?.podTemplate) ? object.spec.podTemplate : {}
	const label = podTemplateLabels(object)[TEMPLATE_LABEL]
	if (label !== expected.templateName) {
		throw new KubernetesWorkspaceMismatchError(
			name,
			'template-label',
			expected.templateName,
			typeof label === 'string' ? label : undefined,
		)
	}
	if (expected.runtimeClassName !== undefined) {
		const podSpec = isRecord(podTemplate.spec) ? podTemplate.spec : {}
		const runtime = podSpec.runtimeClassName
		if (runtime !== expected.runtimeClassName) {
			throw new KubernetesWorkspaceMismatchError(
				name,
				'runtimeClassName',
				expected.runtimeClassName,
				typeof runtime === 'string' ? runtime : undefined,
			)
		}
	}
	if (expected.egressProfile !== undefined) checkEgressProfile(object, expected.egressProfile)
}
