// Holder epochs, refreshPodTemplate and the fleet verbs through a workspace handle against the
// scripted API and real guest agents (scripted-workspace-api.ts): which write each call sends —
// the release-14 merge patch without an epoch, one JSON patch with its guard with one — what a
// superseded holder leaves untouched (the cluster, and the handle's own terminals and session),
// and the request log of the verbs that reach a workspace without opening it.
import { describe, expect, it } from 'vitest'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { deleteKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/delete-kubernetes-workspace.js'
import { suspendKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/suspend-kubernetes-workspace.js'
import {
	KubernetesPatchNotAppliedError,
	KubernetesPrivilegeProbeError,
	KubernetesWorkspaceMismatchError,
	KubernetesWorkspacePreconditionError,
	KubernetesWorkspaceSuspendTimeoutError,
	SandboxArgumentError,
} from '../../../src/index.js'
import type { RecordedCall } from './scripted-api-port.js'
import { statusError } from './scripted-api-port.js'
import { blockTemplate, type ScriptedWorkspaceApi } from './scripted-workspace-api.js'
import { backend, open, wokenFirstByAnother, workspaceApi } from './workspace-handle-fixture.js'

const SANDBOX = '/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-w1'
const POD = '/api/v1/namespaces/ns/pods/namzu-ws-w1'
const EPOCH = 'sandbox.namzu.ai/holder-epoch'
const EPOCH_PATH = '/metadata/annotations/sandbox.namzu.ai~1holder-epoch'
const patchCalls = (api: ScriptedWorkspaceApi): RecordedCall[] =>
	api.calls.filter((call) => call.verb === 'PATCH')
type Operation = { op: string; path: string; value?: unknown }
/** A recorded JSON patch's operations (none when the call is missing). */
const operations = (call: RecordedCall | undefined): Operation[] =>
	(call?.body as Operation[] | undefined) ?? []
const ops = (call: RecordedCall | undefined) => operations(call).map((op) => `${op.op} ${op.path}`)

/** Another holder raises the stored epoch behind this handle's back. */
function holdAt(api: ScriptedWorkspaceApi, epoch: number): void {
	const sandbox = api.model.sandbox
	if (!sandbox) throw new Error('no sandbox')
	api.model.sandbox = {
		...sandbox,
		metadata: {
			...sandbox.metadata,
			annotations: { ...sandbox.metadata.annotations, [EPOCH]: String(epoch) },
		},
	}
}

describe('holder epochs on a workspace handle', () => {
	it('R15-7948fc0-09, R15-30da35d-18: without an epoch every write is the release-14 merge patch, unconditional', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		holdAt(api, 7)
		await workspace.suspend({ flush: false })
		await workspace.resume()
		const [suspend, resume] = patchCalls(api)
		for (const [call, mode] of [
			[suspend, 'Suspended'],
			[resume, 'Running'],
		] as const) {
			expect(call?.patchType).toBeUndefined()
			const body = call?.body as { metadata: { annotations: Record<string, string> } }
			expect(Object.keys(body.metadata.annotations)).toEqual([
				'sandbox.namzu.ai/operating-mode-changed-at',
			])
			expect(JSON.stringify(call?.body)).toBe(
				JSON.stringify({ metadata: body.metadata, spec: { operatingMode: mode } }),
			)
		}
		// Applied over the workspace held at 7, which stays held at 7.
		expect(api.model.sandbox?.metadata.annotations?.[EPOCH]).toBe('7')
	})

	it('R15-7948fc0-01, R15-7948fc0-02, R15-30da35d-14: create stamps the epoch and the template revision; later writes carry the handle epoch in a JSON patch guard', async () => {
		const api = await workspaceApi()
		const workspace = await open(api, { epoch: 3 })
		const post = api.calls.find((call) => call.verb === 'POST')
		const annotations = (post?.body as KubernetesObject | undefined)?.metadata.annotations ?? {}
		expect(annotations[EPOCH]).toBe('3')
		expect(annotations['sandbox.namzu.ai/pod-template-hash']).toMatch(/^[0-9a-f]{16}$/)
		expect(workspace.templateRevision).toBe(annotations['sandbox.namzu.ai/pod-template-hash'])
		expect(workspace.templateCurrent).toBe(true)
		await workspace.suspend({ flush: false })
		const [suspend] = patchCalls(api)
		expect(suspend?.patchType).toBe('json')
		expect(ops(suspend)).toEqual([
			`test ${EPOCH_PATH}`,
			'add /metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at',
			`add ${EPOCH_PATH}`,
			'add /spec/operatingMode',
		])
		expect(api.model.sandbox?.spec.operatingMode).toBe('Suspended')
	})

	it('R15-7948fc0-04, R15-7948fc0-05, R15-7948fc0-06: a superseded holder is refused before the guest is touched or the session torn down, and nothing is written', async () => {
		const guestOps: string[] = []
		const seen = (op: string) => (reply: Record<string, unknown>) => {
			guestOps.push(op)
			return reply
		}
		const api = await workspaceApi({
			rewriteReply: { flush: seen('flush'), quiesce: seen('quiesce') },
		})
		const workspace = await open(api, { epoch: 3 })
		holdAt(api, 9)
		const before = structuredClone(api.model.sandbox)
		for (const attempt of [
			() => workspace.suspend({ quiesce: true }),
			() => workspace.destroy({ deleteDisk: true }),
		]) {
			const error = await attempt().catch((e: unknown) => e)
			expect(error).toBeInstanceOf(KubernetesWorkspacePreconditionError)
			expect(error).toMatchObject({
				workspaceId: 'w1',
				sandboxName: 'namzu-ws-w1',
				epoch: 3,
				storedEpoch: 9,
			})
		}
		expect(api.calls.filter((call) => call.verb === 'PATCH' || call.verb === 'DELETE')).toEqual([])
		expect(api.model.sandbox).toEqual(before)
		// No flush, no quiesce reached the guest: the refusal came before any of the suspend's steps.
		expect(guestOps).toEqual([])
		// The handle is as it was: running and serving on the same session.
		expect(workspace.suspended).toBe(false)
		expect((await workspace.exec('true')).exitCode).toBe(0)
		// An epoch at least the stored one writes.
		await workspace.suspend({ flush: false, epoch: 9 })
		expect(api.model.sandbox?.spec.operatingMode).toBe('Suspended')
	})

	it('R15-7948fc0-08: resume({ epoch }) writes the epoch on a running workspace, and the handle keeps it', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await workspace.resume()
		expect(patchCalls(api)).toEqual([])
		await workspace.resume({ epoch: 5 })
		expect(patchCalls(api).map(ops)).toEqual([[`test /metadata/annotations`, `add ${EPOCH_PATH}`]])
		expect(api.model.sandbox?.metadata.annotations?.[EPOCH]).toBe('5')
		expect(api.model.sandbox?.spec.operatingMode).toBeUndefined()
		await workspace.suspend({ flush: false })
		const suspend = patchCalls(api)[1]
		expect(operations(suspend).at(0)).toEqual({
			op: 'test',
			path: EPOCH_PATH,
			value: '5',
		})
	})

	it('R15-7948fc0-07, R15-7948fc0-10: an adopt of a running workspace writes its epoch; no annotation reads as 0', async () => {
		const api = await workspaceApi()
		await open(api)
		expect(api.model.sandbox?.metadata.annotations?.[EPOCH]).toBeUndefined()
		const second = await open(api, { epoch: 2 })
		expect(second.origin).toBe('adopted-running')
		expect(patchCalls(api).map(ops)).toEqual([[`test /metadata/annotations`, `add ${EPOCH_PATH}`]])
		expect(api.model.sandbox?.metadata.annotations?.[EPOCH]).toBe('2')
		// The first holder's adopt under epoch 1 is now refused, with nothing written.
		const late = await open(api, { epoch: 1 }).catch((e: unknown) => e)
		expect(late).toBeInstanceOf(KubernetesWorkspacePreconditionError)
		expect(patchCalls(api)).toHaveLength(1)
	})

	it('R15-7948fc0-02: the cleanup patch after a failed start carries the epoch of the call', async () => {
		const api = await workspaceApi({ privileged: () => true })
		await expect(open(api, { epoch: 4 })).rejects.toBeInstanceOf(KubernetesPrivilegeProbeError)
		const [cleanup] = patchCalls(api)
		expect(cleanup?.patchType).toBe('json')
		expect(operations(cleanup).at(-1)).toEqual({
			op: 'add',
			path: '/spec/operatingMode',
			value: 'Suspended',
		})
		expect(api.model.sandbox?.metadata.annotations?.[EPOCH]).toBe('4')
	})
})

describe('refreshPodTemplate on a workspace handle', () => {
	it('R15-30da35d-01, R15-30da35d-02, R15-30da35d-03, R15-30da35d-06: one JSON patch, the epoch guard in the same body; without the option the plain merge patch', async () => {
		const api = await workspaceApi()
		const workspace = await open(api, { epoch: 1 })
		await workspace.suspend({ flush: false })
		await workspace.resume({ refreshPodTemplate: true, epoch: 2 })
		const refresh = patchCalls(api)[1]
		expect(refresh?.patchType).toBe('json')
		expect(ops(refresh)).toEqual([
			'test /spec/operatingMode',
			`test ${EPOCH_PATH}`,
			'add /metadata/annotations/sandbox.namzu.ai~1operating-mode-changed-at',
			'add /metadata/annotations/sandbox.namzu.ai~1pod-template-hash',
			`add ${EPOCH_PATH}`,
			'add /spec/podTemplate',
			'add /spec/operatingMode',
		])
		expect(workspace.templateCurrent).toBe(true)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('R15-30da35d-10, R15-30da35d-01: on a running workspace the option changes nothing (adopt and resume alike)', async () => {
		const api = await workspaceApi()
		const first = await open(api)
		const podTemplate = structuredClone(api.model.sandbox?.spec.podTemplate)
		const second = await open(api, { refreshPodTemplate: true })
		expect(second.origin).toBe('adopted-running')
		await first.resume({ refreshPodTemplate: true })
		expect(patchCalls(api)).toEqual([])
		expect(api.model.sandbox?.spec.podTemplate).toEqual(podTemplate)
	})

	it('R15-30da35d-11: a refresh whose test loses to another process resume binds the pod that is there', async () => {
		const { api, raced } = await wokenFirstByAnother()
		const workspace = await open(api)
		await workspace.suspend({ flush: false })
		const podTemplate = structuredClone(api.model.sandbox?.spec.podTemplate)
		await workspace.resume({ refreshPodTemplate: true })
		expect(raced()).toBe(true)
		expect(api.model.sandbox?.spec.podTemplate).toEqual(podTemplate)
		expect(patchCalls(api)).toHaveLength(2)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('R15-30da35d-12, R15-30da35d-13, R15-30da35d-16: the template-label refusal stands; the RuntimeClass one is lifted only when the refresh lands; no annotation reads as unknown', async () => {
		const template = blockTemplate()
		const api = await workspaceApi({ template })
		await open(api)
		await handlesSuspended(api)
		const stored = api.model.sandbox
		if (!stored) throw new Error('no sandbox')
		// A workspace created before the annotation, from a pod template without a RuntimeClass.
		api.model.sandbox = structuredClone({
			...stored,
			metadata: { ...stored.metadata, annotations: {} },
		})
		const kata = { runtimeClassName: 'kata' }
		// The template now carries the class: a refresh writes it, so the adopt may proceed.
		const spec = (template.spec as { podTemplate: { spec: Record<string, unknown> } }).podTemplate
			.spec
		Object.assign(spec, kata)
		const plain = await open(api, { runtimeClassName: 'kata' }).catch((e: unknown) => e)
		expect(plain).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		const refreshed = await open(api, { runtimeClassName: 'kata', refreshPodTemplate: true })
		expect(refreshed.origin).toBe('resumed')
		expect(refreshed.templateCurrent).toBe(true)
		// A label mismatch is refused with the option too.
		await refreshed.suspend({ flush: false })
		const other = await open(api, { sandboxTemplateName: 'other', refreshPodTemplate: true }).catch(
			(e: unknown) => e,
		)
		expect(other).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		expect((other as KubernetesWorkspaceMismatchError).field).toBe('template-label')
		const old = await workspaceApi()
		await open(old)
		const ancient = old.model.sandbox
		if (!ancient) throw new Error('no sandbox')
		old.model.sandbox = { ...ancient, metadata: { ...ancient.metadata, annotations: {} } }
		const adopted = await open(old)
		expect(adopted.templateRevision).toBeUndefined()
		expect(adopted.templateCurrent).toBe(false)
	})
})

/** Suspends the workspace in `api` through the standalone verb (no handle involved). */
async function handlesSuspended(api: ScriptedWorkspaceApi): Promise<void> {
	await suspendKubernetesWorkspace(backend(api), 'w1', {}, { api: api.port })
}

describe('the standalone verbs against the scripted API', () => {
	it('R15-7bf9425-03, R15-7bf9425-07: suspendKubernetesWorkspace reads, patches once and waits for the pod; flush and quiesce are refused', async () => {
		const api = await workspaceApi()
		await open(api)
		api.calls.length = 0
		await suspendKubernetesWorkspace(backend(api), 'w1', {}, { api: api.port })
		const log = api.log().filter((entry, i, all) => entry !== all[i - 1])
		expect(log).toEqual([`GET ${SANDBOX}`, `GET ${POD}`, `PATCH ${SANDBOX}`, `GET ${POD}`])
		expect(api.model.pod).toBeUndefined()
		for (const refused of [{ quiesce: true }, { flush: true }, { flush: { timeoutMs: 5 } }]) {
			const error = await suspendKubernetesWorkspace(backend(api), 'w1', refused, {
				api: api.port,
			}).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(SandboxArgumentError)
		}
	})

	it('R15-7bf9425-08: a pod that outlives readyTimeoutMs rejects with KubernetesWorkspaceSuspendTimeoutError', async () => {
		const api = await workspaceApi({ podOutlivesSuspend: () => true })
		await open(api)
		const error = await suspendKubernetesWorkspace(
			backend(api, { readyTimeoutMs: 300, readyPollIntervalMs: 50 }),
			'w1',
			{},
			{ api: api.port },
		).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesWorkspaceSuspendTimeoutError)
	})

	it('R15-7bf9425-06, R15-7bf9425-04: a DELETE that fails rejects retryable, and the retry deletes', async () => {
		let fail = true
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'DELETE' && fail) {
					fail = false
					throw statusError('DELETE', call.path, 503)
				}
				return undefined
			},
		})
		await open(api)
		api.calls.length = 0
		const error = await deleteKubernetesWorkspace(backend(api), 'w1', {}, { api: api.port }).catch(
			(e: unknown) => e,
		)
		expect(error).toMatchObject({ retryable: true, status: 503 })
		await deleteKubernetesWorkspace(backend(api), 'w1', {}, { api: api.port })
		expect(api.log()).toEqual([`DELETE ${SANDBOX}`, `DELETE ${SANDBOX}`])
		expect(api.model.sandbox).toBeUndefined()
		// Fenced: read, decide, DELETE with the read's resourceVersion as its precondition.
		await deleteKubernetesWorkspace(backend(api), 'w1', { epoch: 1 }, { api: api.port })
	})

	it('R15-7948fc0-12: a guard the API server keeps refusing ends as KubernetesPatchNotAppliedError', async () => {
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'PATCH' && call.patchType === 'json') {
					throw new KubernetesPatchNotAppliedError({
						verb: 'PATCH',
						path: call.path,
						transport: 'status',
						status: 422,
						retryable: false,
					})
				}
				return undefined
			},
		})
		await open(api)
		const error = await suspendKubernetesWorkspace(
			backend(api),
			'w1',
			{ epoch: 1 },
			{
				api: api.port,
			},
		).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesPatchNotAppliedError)
	})
})
