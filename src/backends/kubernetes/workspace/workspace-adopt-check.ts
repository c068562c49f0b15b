/**
 * What an adopted object must agree on before it is woken or dialed, as one pure check: a block
 * disk (workspace-disk.ts), the `sandbox.namzu.ai/template` label of this call's template on its
 * pod template (a policy's `podSelector` matches that label, egress configured or not), and — when
 * a RuntimeClass is required — that class (the privilege probe cannot see a missing VM boundary).
 */
import { isRecord } from '../../../wire/is-record.js'
import { type KubernetesObject, TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { checkWorkspaceDisk } from './workspace-disk.js'
import {
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
} from './workspace-errors.js'

export interface AdoptExpectations {
	readonly templateName: string
	readonly runtimeClassName?: string
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
	const meta = isRecord(podTemplate.metadata) ? podTemplate.metadata : {}
	const labels = isRecord(meta.labels) ? meta.labels : {}
	const label = labels[TEMPLATE_LABEL]
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
}
