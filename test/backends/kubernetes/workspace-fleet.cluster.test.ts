// Kubernetes workspace fleet verbs, holder epochs and refreshPodTemplate against the local cluster
// (real kube-apiserver, real agent-sandbox controller, the process kubelet). The fleet objects are
// `Sandbox`es created Suspended through the API — real objects, no pods — so twenty of them cost
// nothing on two cores; the request log (recording-api-proxy.ts) pins what each verb sent and the
// pod list shows none started. A stale epoch's refusal is checked on the object itself
// (resourceVersion, spec and annotations before and after). The refresh runs on one real block
// workspace: its replacement pod carries the edited template's env var and label, and the disk's
// file, the stored claims and the PVC uid are unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import {
	deleteKubernetesWorkspace,
	KubernetesApiError,
	type KubernetesBackendConfig,
	type KubernetesWorkspace,
	KubernetesWorkspaceDiskError,
	KubernetesWorkspacePreconditionError,
	KubernetesWorkspaceSuspendedError,
	listKubernetesWorkspaces,
	suspendKubernetesWorkspace,
} from '../../../src/index.js'
import { type KubeObject, listItems, waitGone } from '../../cluster/cluster-objects.js'
import { directSandbox, paths, sandboxTemplate } from '../../cluster/sandbox-fixtures.js'
import { backendAccess, useKubernetesHarness } from './kubernetes-harness.js'
import { type RecordingApiProxy, startRecordingApiProxy } from './recording-api-proxy.js'
import { bindServiceAccount } from './service-account.js'

const WS_TEMPLATE = 'ws-fleet-block'
const FLEET = 20
const CHANGED_AT = 'sandbox.namzu.ai/operating-mode-changed-at'
const EPOCH = 'sandbox.namzu.ai/holder-epoch'
const HASH = 'sandbox.namzu.ai/pod-template-hash'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-wsf' })
const handles: KubernetesWorkspace[] = []
let recorder: RecordingApiProxy

beforeAll(async () => {
	await h.cluster.api.create(
		paths.templates(h.namespace),
		sandboxTemplate(WS_TEMPLATE, { workspace: 'block' }),
	)
	recorder = await startRecordingApiProxy(h.cluster.access)
})

afterAll(async () => {
	await Promise.allSettled(
		handles.map((handle) => handle.destroy({ deleteDisk: true, flush: false })),
	)
	await recorder?.close()
})

function config(overrides: Partial<KubernetesBackendConfig> = {}): KubernetesBackendConfig {
	return h.config({ sandboxTemplateName: WS_TEMPLATE, ...overrides })
}

/** The config whose every API request goes through the recorder. */
function recorded(): KubernetesBackendConfig {
	return config({
		access: { server: recorder.server, getToken: async () => h.cluster.access.token },
	})
}

const sandboxPath = (name: string) => paths.sandbox(h.namespace, name)
const read = (name: string) =>
	h.cluster.api.get<KubeObject & { metadata: { resourceVersion: string } }>(sandboxPath(name))

/** A workspace object as a create would leave it, without its disk: cheap, and never woken here. */
function bareWorkspace(
	id: string,
	mode: 'Running' | 'Suspended',
	annotations: Record<string, string> = {},
): Record<string, unknown> {
	const base = directSandbox(`namzu-ws-${id}`, { workspace: false }) as {
		spec: Record<string, unknown>
	}
	return {
		...base,
		metadata: {
			name: `namzu-ws-${id}`,
			labels: { 'sandbox.namzu.ai/template': WS_TEMPLATE },
			...(Object.keys(annotations).length === 0 ? {} : { annotations }),
		},
		spec: { ...base.spec, operatingMode: mode },
	}
}

/**
 * The object once the controller stopped writing its status (the resourceVersion holds for a
 * second): what a before/after comparison of our own writes starts from.
 */
async function settled(name: string) {
	let last = await read(name)
	for (let i = 0; i < 30; i++) {
		await new Promise((resolve) => setTimeout(resolve, 1000))
		const next = await read(name)
		if (next.metadata.resourceVersion === last.metadata.resourceVersion) return next
		last = next
	}
	return last
}

const podNames = async () =>
	(await listItems(h.cluster.api, paths.pods(h.namespace))).map((pod) => pod.metadata.name)

const sandboxesPath = () => `/apis/agents.x-k8s.io/v1beta1/namespaces/${h.namespace}/sandboxes`

describe('Kubernetes workspace fleet verbs on the local cluster', () => {
	it('R15-7bf9425-01, R15-7bf9425-02, R15-7bf9425-03, R15-7bf9425-04, R15-7bf9425-05, R15-7bf9425-10, R15-7948fc0-11: lists, suspends and deletes 20 workspaces with one GET, no pod started and no agent dialed', async () => {
		const ids = Array.from({ length: FLEET }, (_, i) => `fleet-${String(i).padStart(2, '0')}`)
		for (const [i, id] of ids.entries()) {
			const annotations: Record<string, string> =
				i % 2 === 0 ? { [CHANGED_AT]: '2026-11-01T10:00:00.000Z', [EPOCH]: String(i) } : {}
			await h.cluster.api.create(
				paths.sandboxes(h.namespace),
				bareWorkspace(id, 'Suspended', annotations),
			)
		}
		// A Sandbox that is not a workspace's is not listed.
		const other = bareWorkspace('x', 'Suspended') as { metadata: object }
		await h.cluster.api.create(paths.sandboxes(h.namespace), {
			...other,
			metadata: { name: 'namzu-task-other' },
		})
		recorder.clear()
		const summaries = await listKubernetesWorkspaces(recorded(), {})
		expect(recorder.requests).toEqual([`GET ${sandboxesPath()}`])
		expect(summaries.map((s) => s.workspaceId).sort()).toEqual(ids)
		for (const summary of summaries) {
			const index = ids.indexOf(summary.workspaceId)
			expect(summary.operatingMode).toBe('Suspended')
			expect(summary.template).toBe(WS_TEMPLATE)
			expect(Number.isNaN(Date.parse(summary.createdAt ?? ''))).toBe(false)
			if (index % 2 === 0) {
				expect(summary.operatingModeChangedAt).toBe('2026-11-01T10:00:00.000Z')
				expect(summary.holderEpoch).toBe(index)
			} else {
				// Never defaulted to createdAt: the field is absent.
				expect('operatingModeChangedAt' in summary).toBe(false)
				expect(summary.holderEpoch).toBe(0)
			}
		}

		recorder.clear()
		for (const id of ids) await suspendKubernetesWorkspace(recorded(), id, {})
		// Already suspended: read the object and its pod, write nothing.
		expect(recorder.requests.filter((r) => !r.startsWith('GET '))).toEqual([])
		expect(recorder.requests.filter((r) => r.includes('/pods/'))).toHaveLength(FLEET)

		recorder.clear()
		for (const id of ids) await deleteKubernetesWorkspace(recorded(), id)
		expect(recorder.requests).toEqual(ids.map((id) => `DELETE ${sandboxesPath()}/namzu-ws-${id}`))
		for (const id of ids)
			await waitGone(h.cluster.api, sandboxPath(`namzu-ws-${id}`), { timeoutMs: 30_000 })
		// Gone counts as deleted.
		await deleteKubernetesWorkspace(recorded(), ids[0] ?? '')
		expect((await podNames()).filter((name) => name.startsWith('namzu-ws-fleet-'))).toEqual([])
		await h.cluster.api.remove(sandboxPath('namzu-task-other'))
	})

	it('R15-7948fc0-04, R15-7948fc0-05, R15-7948fc0-09: a stale epoch changes nothing on the object; an unfenced write still applies over epoch 7', async () => {
		await h.cluster.api.create(
			paths.sandboxes(h.namespace),
			bareWorkspace('held', 'Suspended', { [EPOCH]: '7' }),
		)
		const before = await settled('namzu-ws-held')
		recorder.clear()
		for (const attempt of [
			() => suspendKubernetesWorkspace(recorded(), 'held', { epoch: 3 }),
			() => deleteKubernetesWorkspace(recorded(), 'held', { epoch: 6 }),
		]) {
			const error = await attempt().catch((e: unknown) => e)
			expect(error).toBeInstanceOf(KubernetesWorkspacePreconditionError)
			expect(error).toMatchObject({
				workspaceId: 'held',
				sandboxName: 'namzu-ws-held',
				storedEpoch: 7,
			})
		}
		expect(recorder.requests.filter((r) => !r.startsWith('GET '))).toEqual([])
		const after = await read('namzu-ws-held')
		expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion)
		expect(after.spec).toEqual(before.spec)
		expect(after.metadata.annotations).toEqual(before.metadata.annotations)
		// The equal epoch may write; an unfenced delete carries no condition at all.
		await suspendKubernetesWorkspace(recorded(), 'held', { epoch: 7 })
		recorder.clear()
		await deleteKubernetesWorkspace(recorded(), 'held')
		expect(recorder.requests).toEqual([`DELETE ${sandboxesPath()}/namzu-ws-held`])
		await waitGone(h.cluster.api, sandboxPath('namzu-ws-held'), { timeoutMs: 30_000 })
	})

	it('R15-7948fc0-03: two holders racing a write from the same read — exactly one wins, and the loser is refused on its retry', async () => {
		await h.cluster.api.create(
			paths.sandboxes(h.namespace),
			bareWorkspace('race', 'Suspended', { [EPOCH]: '4' }),
		)
		// The guard each holder's JSON patch carries, built from the same read (epoch 4).
		const guarded = (epoch: number) => [
			{ op: 'test', path: `/metadata/annotations/${EPOCH.replace('/', '~1')}`, value: '4' },
			{
				op: 'add',
				path: `/metadata/annotations/${EPOCH.replace('/', '~1')}`,
				value: String(epoch),
			},
		]
		const answers = await Promise.all(
			[5, 6].map((epoch) =>
				h.cluster.api.send('PATCH', sandboxPath('namzu-ws-race'), {
					body: guarded(epoch),
					contentType: 'application/json-patch+json',
				}),
			),
		)
		const statuses = answers.map((answer) => answer.status).sort()
		expect(statuses[0]).toBe(200)
		expect(statuses[1]).not.toBe(200)
		const stored = Number((await read('namzu-ws-race')).metadata.annotations?.[EPOCH])
		expect([5, 6]).toContain(stored)
		// Through the verbs: the superseded holder (5) meets 6 and is refused; 6 still writes.
		await suspendKubernetesWorkspace(recorded(), 'race', { epoch: 6 })
		const late = await suspendKubernetesWorkspace(recorded(), 'race', { epoch: 5 }).catch(
			(e: unknown) => e,
		)
		expect(late).toBeInstanceOf(KubernetesWorkspacePreconditionError)
		expect((await read('namzu-ws-race')).metadata.annotations?.[EPOCH]).toBe('6')
		await deleteKubernetesWorkspace(recorded(), 'race', { epoch: 6 })
	})

	it('R15-7bf9425-16, R15-7948fc0-14: without list on sandboxes only listKubernetesWorkspaces fails, with a 403 naming list; fenced writes need only get, patch and delete', async () => {
		await h.cluster.api.create(paths.sandboxes(h.namespace), bareWorkspace('norbac', 'Suspended'))
		const token = await bindServiceAccount(h.cluster.api, h.namespace, 'no-list', [
			{
				apiGroups: ['agents.x-k8s.io'],
				resources: ['sandboxes'],
				verbs: ['get', 'patch', 'delete'],
			},
			{ apiGroups: [''], resources: ['pods'], verbs: ['get'] },
		])
		const narrow = config({ access: backendAccess({ ...h.cluster.access, token }) })
		const error = await listKubernetesWorkspaces(narrow).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect((error as KubernetesApiError).status).toBe(403)
		expect((error as Error).message).toContain('list')
		await suspendKubernetesWorkspace(narrow, 'norbac', { epoch: 1 })
		await deleteKubernetesWorkspace(narrow, 'norbac', { epoch: 1 })
		await waitGone(h.cluster.api, sandboxPath('namzu-ws-norbac'), { timeoutMs: 30_000 })
	})
})

describe('a real workspace: suspendKubernetesWorkspace, refresh() and refreshPodTemplate', () => {
	it('R15-7bf9425-07, R15-7bf9425-11, R15-7bf9425-12, R15-7bf9425-13, R15-7bf9425-14, R15-7bf9425-15: a foreign suspend is seen by refresh() and by a failed call, and resume() brings the same disk back', async () => {
		const first = await createKubernetesWorkspace(recorded(), { workspaceId: 'foreign', epoch: 1 })
		handles.push(first)
		const second = await createKubernetesWorkspace(config(), { workspaceId: 'foreign' })
		handles.push(second)
		await first.writeFile('mark', 'kept')
		const podBefore = (
			await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, 'namzu-ws-foreign'))
		).metadata.uid
		recorder.clear()
		await suspendKubernetesWorkspace(recorded(), 'foreign', { epoch: 1 })
		// Resolved only once the pod was gone; the suspend patch and the pod reads, nothing else.
		expect(recorder.requests.filter((r) => !r.startsWith('GET '))).toEqual([
			`PATCH ${sandboxesPath()}/namzu-ws-foreign`,
		])
		// Stopped: gone, replaced, or still listed in a terminal phase (the kubelet records the
		// exit before the object is removed, and a terminal pod runs nothing).
		const pod = await h.cluster.api.find<KubeObject>(paths.pod(h.namespace, 'namzu-ws-foreign'))
		const stopped =
			pod === undefined ||
			pod.metadata.uid !== podBefore ||
			['Succeeded', 'Failed'].includes(String(pod.status?.phase))
		expect(stopped, `pod after the suspend: ${JSON.stringify(pod?.status)}`).toBe(true)
		// The first handle still believes it runs until it re-reads.
		expect(first.suspended).toBe(false)
		await first.refresh()
		expect(first.suspended).toBe(true)
		const admission = await first.exec('true').catch((e: unknown) => e)
		expect(admission).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect((admission as KubernetesWorkspaceSuspendedError).noticedBy).toBe('admission')
		// The second learns it from a call that failed at the transport.
		const transport = await second.exec('true').catch((e: unknown) => e)
		expect(transport).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect((transport as KubernetesWorkspaceSuspendedError).noticedBy).toBe('transport')
		expect((transport as Error).cause).toBeInstanceOf(Error)
		expect((transport as Error).message).not.toBe((admission as Error).message)
		expect(second.suspended).toBe(true)
		// Unconfirmed: this handle's own suspend still sends the patch (and waits for the pod).
		recorder.clear()
		await first.suspend({ flush: false })
		expect(recorder.requests).toContain(`PATCH ${sandboxesPath()}/namzu-ws-foreign`)
		await first.resume()
		expect((await first.readFile('mark')).toString()).toBe('kept')
		expect(first.suspended).toBe(false)
	})

	it('R15-30da35d-01, R15-30da35d-05, R15-30da35d-07, R15-30da35d-08, R15-30da35d-09, R15-30da35d-14, R15-30da35d-15: refreshPodTemplate wakes onto the edited template with the disk intact; each disk refusal leaves it suspended with nothing sent', async () => {
		const workspace = await createKubernetesWorkspace(config(), { workspaceId: 'refresh' })
		handles.push(workspace)
		expect(workspace.templateCurrent).toBe(true)
		const created = await read('namzu-ws-refresh')
		expect(created.metadata.annotations?.[HASH]).toBe(workspace.templateRevision)
		await workspace.writeFile('disk-file', 'on the disk')
		await workspace.suspend()
		const claimsBefore = JSON.stringify(created.spec?.volumeClaimTemplates)
		const pvcBefore = (
			await h.cluster.api.get<KubeObject>(paths.pvc(h.namespace, 'workspace-namzu-ws-refresh'))
		).metadata.uid

		const templatePath = `${paths.templates(h.namespace)}/${WS_TEMPLATE}`
		const original = await h.cluster.api.get<KubeObject>(templatePath)
		const put = async (mutate: (spec: Record<string, unknown>) => void) => {
			const current = await h.cluster.api.get<KubeObject>(templatePath)
			const spec = structuredClone(original.spec ?? {})
			mutate(spec)
			await h.cluster.api.call('PUT', templatePath, { body: { ...current, spec } })
		}
		const container = (spec: Record<string, unknown>) =>
			(
				((spec.podTemplate as Record<string, unknown>).spec as Record<string, unknown>)
					.containers as Record<string, unknown>[]
			)[0] as Record<string, unknown>

		// 1. The template no longer claims the disk through volumeDevices.
		await put((spec) => {
			delete container(spec).volumeDevices
		})
		const rvBefore = (await settled('namzu-ws-refresh')).metadata.resourceVersion
		const dropped = await workspace.resume({ refreshPodTemplate: true }).catch((e: unknown) => e)
		expect(dropped).toBeInstanceOf(KubernetesWorkspaceDiskError)
		expect((dropped as KubernetesWorkspaceDiskError).problem).toBe('refresh-drops-disk')
		expect(workspace.suspended).toBe(true)
		const untouched = await read('namzu-ws-refresh')
		expect(untouched.metadata.resourceVersion).toBe(rvBefore)
		expect(untouched.spec?.operatingMode).toBe('Suspended')

		// 2. The template declares a second disk (claim and device) the workspace does not have.
		await put((spec) => {
			const claims = spec.volumeClaimTemplates as Record<string, unknown>[]
			claims.push({ ...structuredClone(claims[0]), metadata: { name: 'scratch' } })
			const c = container(spec)
			c.volumeDevices = [
				...(c.volumeDevices as unknown[]),
				{ name: 'scratch', devicePath: '/dev/scratch' },
			]
		})
		recorder.clear()
		const added = await createKubernetesWorkspace(recorded(), {
			workspaceId: 'refresh',
			refreshPodTemplate: true,
		}).catch((e: unknown) => e)
		expect(added).toBeInstanceOf(KubernetesWorkspaceDiskError)
		expect((added as KubernetesWorkspaceDiskError).problem).toBe('refresh-adds-disk')
		// The create POST met the standing object (409); nothing was written to it.
		expect(
			recorder.requests.filter((r) => r.startsWith('PATCH ') || r.startsWith('DELETE ')),
		).toEqual([])
		const stillSuspended = await read('namzu-ws-refresh')
		expect(stillSuspended.metadata.resourceVersion).toBe(rvBefore)
		expect(stillSuspended.spec?.operatingMode).toBe('Suspended')

		// 3. An edit a refresh can apply: an env var and a pod label.
		await put((spec) => {
			const podTemplate = spec.podTemplate as { metadata: { labels: Record<string, string> } }
			podTemplate.metadata.labels['example.com/revision'] = 'two'
			const c = container(spec)
			c.env = [...(c.env as unknown[]), { name: 'NAMZU_TEMPLATE_REVISION', value: 'two' }]
		})
		expect(workspace.templateCurrent).toBe(true)
		await workspace.resume({ refreshPodTemplate: true })
		const env = await workspace.exec('sh', ['-c', 'printf %s "$NAMZU_TEMPLATE_REVISION"'])
		expect(env.stdout).toBe('two')
		const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, 'namzu-ws-refresh'))
		expect(pod.metadata.labels?.['example.com/revision']).toBe('two')
		expect((await workspace.readFile('disk-file')).toString()).toBe('on the disk')
		const refreshed = await read('namzu-ws-refresh')
		expect(JSON.stringify(refreshed.spec?.volumeClaimTemplates)).toBe(claimsBefore)
		expect(refreshed.metadata.annotations?.[HASH]).not.toBe(created.metadata.annotations?.[HASH])
		expect(workspace.templateRevision).toBe(refreshed.metadata.annotations?.[HASH])
		expect(workspace.templateCurrent).toBe(true)
		const pvcAfter = (
			await h.cluster.api.get<KubeObject>(paths.pvc(h.namespace, 'workspace-namzu-ws-refresh'))
		).metadata.uid
		expect(pvcAfter).toBe(pvcBefore)
		await h.cluster.api.call('PUT', templatePath, {
			body: { ...(await h.cluster.api.get<KubeObject>(templatePath)), spec: original.spec },
		})
	})
})
