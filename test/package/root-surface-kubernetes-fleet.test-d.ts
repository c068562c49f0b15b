/**
 * The Kubernetes workspace fleet names at the package root, checked by the compiler: the three
 * verbs and their option types, the summary, `refresh()` and the template fields as required
 * members of `KubernetesWorkspace`, the suspension notice, the holder-epoch refusal's fields, and
 * the internal client's `patchType` argument.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type { KubernetesRequest } from '../../src/backends/kubernetes/api/kubernetes-client.js'
import type * as root from '../../src/index.js'
import type * as kubernetes from '../../src/kubernetes-entry.js'

type Instance<T> = T extends abstract new (...args: never[]) => infer I ? I : never
type IsRequired<T, K extends keyof T> = object extends Pick<T, K> ? false : true
type IsReadonly<T, K extends keyof T> =
	(<V>() => V extends { [P in K]: T[K] } ? 1 : 2) extends <V>() => V extends {
		-readonly [P in K]: T[K]
	}
		? 1
		: 2
		? false
		: true

describe('package root: the Kubernetes workspace fleet names', () => {
	it('R15-7bf9425-01, R15-7bf9425-04, R15-7bf9425-07: the three verbs take the config, a workspace id and their options', () => {
		expectTypeOf<typeof root.listKubernetesWorkspaces>()
			.parameter(1)
			.toEqualTypeOf<kubernetes.KubernetesWorkspaceListOptions | undefined>()
		expectTypeOf<typeof root.listKubernetesWorkspaces>().returns.resolves.toEqualTypeOf<
			root.KubernetesWorkspaceSummary[]
		>()
		expectTypeOf<typeof root.deleteKubernetesWorkspace>().parameter(1).toEqualTypeOf<string>()
		expectTypeOf<typeof root.deleteKubernetesWorkspace>()
			.parameter(2)
			.toEqualTypeOf<kubernetes.KubernetesWorkspaceDeleteOptions | undefined>()
		expectTypeOf<typeof root.suspendKubernetesWorkspace>()
			.parameter(2)
			.toEqualTypeOf<root.KubernetesWorkspaceSuspendOptions | undefined>()
		expectTypeOf<kubernetes.KubernetesWorkspaceListOptions>().not.toHaveProperty('epoch')
	})

	it('R15-7bf9425-02, R15-7948fc0-11: the summary fields', () => {
		expectTypeOf<root.KubernetesWorkspaceSummary['workspaceId']>().toEqualTypeOf<string>()
		expectTypeOf<root.KubernetesWorkspaceSummary['operatingMode']>().toEqualTypeOf<
			'Running' | 'Suspended'
		>()
		expectTypeOf<root.KubernetesWorkspaceSummary['template']>().toEqualTypeOf<string | undefined>()
		expectTypeOf<root.KubernetesWorkspaceSummary['createdAt']>().toEqualTypeOf<string | undefined>()
		expectTypeOf<root.KubernetesWorkspaceSummary['operatingModeChangedAt']>().toEqualTypeOf<
			string | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceSummary['holderEpoch']>().toEqualTypeOf<
			number | undefined
		>()
	})

	it('R15-7bf9425-17, R15-30da35d-15: refresh(), templateRevision and templateCurrent are required members; the two fields readonly', () => {
		expectTypeOf<IsRequired<root.KubernetesWorkspace, 'refresh'>>().toEqualTypeOf<true>()
		expectTypeOf<root.KubernetesWorkspace['refresh']>().returns.resolves.toEqualTypeOf<void>()
		expectTypeOf<IsRequired<root.KubernetesWorkspace, 'templateRevision'>>().toEqualTypeOf<true>()
		expectTypeOf<IsRequired<root.KubernetesWorkspace, 'templateCurrent'>>().toEqualTypeOf<true>()
		expectTypeOf<IsReadonly<root.KubernetesWorkspace, 'templateRevision'>>().toEqualTypeOf<true>()
		expectTypeOf<IsReadonly<root.KubernetesWorkspace, 'templateCurrent'>>().toEqualTypeOf<true>()
		expectTypeOf<root.KubernetesWorkspace['templateRevision']>().toEqualTypeOf<string | undefined>()
		expectTypeOf<root.KubernetesWorkspace['templateCurrent']>().toEqualTypeOf<boolean>()
	})

	it('R15-7bf9425-14: noticedBy is typed by KubernetesWorkspaceSuspensionNotice', () => {
		expectTypeOf<root.KubernetesWorkspaceSuspensionNotice>().toEqualTypeOf<
			'admission' | 'transport'
		>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceSuspendedError>['noticedBy']
		>().toEqualTypeOf<root.KubernetesWorkspaceSuspensionNotice>()
	})

	it('R15-7948fc0-01, R15-30da35d-01: epoch and refreshPodTemplate are accepted where the spec names them', () => {
		expectTypeOf<root.KubernetesWorkspaceOptions['epoch']>().toEqualTypeOf<number | undefined>()
		expectTypeOf<root.KubernetesWorkspaceOptions['refreshPodTemplate']>().toEqualTypeOf<
			boolean | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceSuspendOptions['epoch']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<kubernetes.KubernetesWorkspaceResumeOptions['epoch']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<kubernetes.KubernetesWorkspaceResumeOptions['refreshPodTemplate']>().toEqualTypeOf<
			boolean | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceSuspendOptions>().not.toHaveProperty('refreshPodTemplate')
		expectTypeOf<root.KubernetesWorkspaceDestroyOptions['epoch']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<kubernetes.KubernetesWorkspaceDeleteOptions['epoch']>().toEqualTypeOf<
			number | undefined
		>()
	})

	it('R15-7948fc0-05, R15-7948fc0-12: the precondition error fields and the not-applied error are SandboxErrors', () => {
		type Refusal = Instance<typeof root.KubernetesWorkspacePreconditionError>
		expectTypeOf<Refusal>().toExtend<root.SandboxError>()
		expectTypeOf<
			Refusal['operation']
		>().toEqualTypeOf<kubernetes.KubernetesWorkspaceFencedOperation>()
		expectTypeOf<Refusal['workspaceId']>().toEqualTypeOf<string>()
		expectTypeOf<Refusal['sandboxName']>().toEqualTypeOf<string>()
		expectTypeOf<Refusal['epoch']>().toEqualTypeOf<number>()
		expectTypeOf<Refusal['storedEpoch']>().toEqualTypeOf<number | undefined>()
		expectTypeOf<
			Instance<typeof root.KubernetesPatchNotAppliedError>
		>().toExtend<root.SandboxError>()
	})

	it('R15-7948fc0-13: the internal client request takes a patchType', () => {
		expectTypeOf<KubernetesRequest['patchType']>().toEqualTypeOf<
			'merge' | 'json' | 'strategic' | undefined
		>()
	})
})
