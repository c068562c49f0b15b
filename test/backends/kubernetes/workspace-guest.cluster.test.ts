// The workspace's guest on the local cluster (real kube-apiserver, real agent-sandbox controller,
// the process kubelet): a pod deleted under the handle is followed once and the call succeeds
// against the replacement (`pod-replaced`); an agent killed in place (restartCount + 1) is
// `container-restarted`; an agent frozen under a command keeps the workspace after the
// unconfirmed cancellation and the notice says the agent is unreachable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import {
	type KubernetesGuestRestartEvent,
	type KubernetesWorkspace,
	type KubernetesWorkspaceCancellationNotice,
	type KubernetesWorkspaceOptions,
	RemoteCancellationUnknownError,
} from '../../../src/index.js'
import { type KubeObject, waitObject } from '../../cluster/cluster-objects.js'
import { paths, sandboxTemplate } from '../../cluster/sandbox-fixtures.js'
import { useKubernetesHarness } from './kubernetes-harness.js'

const WS_TEMPLATE = 'ws-guest-block'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-wsg' })
const handles: KubernetesWorkspace[] = []

beforeAll(async () => {
	await h.cluster.api.create(
		paths.templates(h.namespace),
		sandboxTemplate(WS_TEMPLATE, { workspace: 'block' }),
	)
})

afterAll(async () => {
	await Promise.allSettled(
		handles.map((handle) => handle.destroy({ deleteDisk: true, flush: false })),
	)
})

async function open(
	workspaceId: string,
	options: Partial<KubernetesWorkspaceOptions> = {},
	execution: { cancelConfirmTimeoutMs?: number } = {},
): Promise<KubernetesWorkspace> {
	const workspace = await createKubernetesWorkspace(
		h.config({ sandboxTemplateName: WS_TEMPLATE }),
		{ workspaceId, ...options },
		{ execution },
	)
	handles.push(workspace)
	return workspace
}

const podPath = (workspace: KubernetesWorkspace) => paths.pod(h.namespace, workspace.id)
const running = (pod: KubeObject) =>
	pod.metadata.deletionTimestamp === undefined &&
	(pod.status as { phase?: string; podIP?: string } | undefined)?.phase === 'Running' &&
	typeof (pod.status as { podIP?: string } | undefined)?.podIP === 'string'

describe('Kubernetes workspace guest on the local cluster', () => {
	it('R15-1d46ef4-02/08: a pod deleted under the handle is followed once: pod-replaced, and the call succeeds against the new guest', async () => {
		const workspace = await open('replaced')
		const events: KubernetesGuestRestartEvent[] = []
		workspace.onGuestRestart((event) => events.push(event))
		await workspace.writeFile('before.txt', 'x')
		const first = workspace.identity.podUid
		await h.cluster.api.remove(podPath(workspace))
		await waitObject(
			h.cluster.api,
			podPath(workspace),
			'a replacement pod',
			(pod) => pod.metadata.uid !== first && running(pod),
		)
		const result = await workspace.exec('/bin/sh', ['-c', 'echo from the replacement'])
		expect(result.stdout).toBe('from the replacement\n')
		expect(workspace.identity.podUid).not.toBe(first)
		expect(events).toHaveLength(1)
		expect(events[0]).toMatchObject({ reason: 'pod-replaced', previous: { podUid: first } })
		expect(workspace.suspended).toBe(false)
	})

	it('R15-1d46ef4-09: an agent killed in place (restartCount + 1) is container-restarted', async () => {
		const workspace = await open('restarted')
		const events: KubernetesGuestRestartEvent[] = []
		workspace.onGuestRestart((event) => events.push(event))
		await workspace.writeFile('a.txt', 'x')
		const before = workspace.identity
		expect(before.guestBootId).toEqual(expect.any(String))
		await h.cluster.faults.pods.killAgent({ namespace: h.namespace, name: workspace.id })
		await waitObject(h.cluster.api, podPath(workspace), 'the agent restarted', (pod) =>
			JSON.stringify(pod.status?.containerStatuses).includes('"restartCount":1'),
		)
		let written = false
		for (let attempt = 0; attempt < 40 && !written; attempt++) {
			written = await workspace.writeFile('b.txt', 'y').then(
				() => true,
				() => new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 250)),
			)
		}
		expect(written).toBe(true)
		expect(workspace.identity.podUid).toBe(before.podUid)
		expect(workspace.identity.guestBootId).not.toBe(before.guestBootId)
		expect(events.map((event) => event.reason)).toEqual(['container-restarted'])
	})

	it("R15-f6bfb7d-10/11/14: an agent frozen under a command keeps the workspace: workspace-kept, no suspend, the notice's agent unreachable", async () => {
		const notices: KubernetesWorkspaceCancellationNotice[] = []
		const workspace = await open(
			'frozen',
			{ onCancellationUnconfirmed: (notice) => notices.push(notice) },
			{ cancelConfirmTimeoutMs: 2_000 },
		)
		const controller = new AbortController()
		let markStarted: () => void = () => {}
		const started = new Promise<void>((resolve) => {
			markStarted = resolve
		})
		const settled = workspace
			.exec('/bin/sh', ['-c', 'echo started; sleep 600'], {
				signal: controller.signal,
				onOutput: () => markStarted(),
			})
			.then(
				() => undefined,
				(error: unknown) => error,
			)
		await started
		const thaw = await h.cluster.faults.pods.freezeAgent({
			namespace: h.namespace,
			name: workspace.id,
		})
		controller.abort()
		const error = await settled
		try {
			expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
			expect((error as RemoteCancellationUnknownError).retirement).toEqual({
				accepted: false,
				reason: 'workspace-kept',
			})
			expect(workspace.suspended).toBe(false)
			const sandbox = await h.cluster.api.get<KubeObject>(paths.sandbox(h.namespace, workspace.id))
			expect((sandbox.spec as { operatingMode?: string }).operatingMode ?? 'Running').toBe(
				'Running',
			)
			expect(notices.length).toBeGreaterThanOrEqual(1)
			expect(notices[0]?.agent).toBe('unreachable')
		} finally {
			await thaw()
		}
	})
})
