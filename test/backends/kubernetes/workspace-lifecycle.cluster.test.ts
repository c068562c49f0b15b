// Kubernetes workspaces against the local cluster (real kube-apiserver, real agent-sandbox
// controller, the process kubelet backing a block claim with an ext4 loop disk mounted at the
// guest's workspace): bytes survive suspend/resume on a new pod uid; a second handle adopts a
// running workspace while a third suspends it; a failed start on an adopted running workspace
// writes nothing; an API server that withholds the suspend patch's answer fails the suspend at the
// request bound, the handle keeps its state and a retry succeeds; a quiesce stops a setsid child
// before the patch; destroy() keeps the disk and destroy({ deleteDisk: true }) removes it; the
// disk, mismatch and name refusals create nothing; a suspended workspace without the configured
// egress profile is refused without a write, and refreshPodTemplate wakes it carrying the label.
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import { createKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import {
	KubernetesApiTimeoutError,
	type KubernetesBackendConfig,
	type KubernetesEgressConfig,
	type KubernetesWorkspace,
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
	type KubernetesWorkspaceOptions,
	KubernetesWorkspaceSuspendedError,
	ReadinessPollTimeout,
	SandboxArgumentError,
} from '../../../src/index.js'
import { type KubeObject, listItems, waitGone } from '../../cluster/cluster-objects.js'
import { paths, sandboxTemplate } from '../../cluster/sandbox-fixtures.js'
import { listSandboxes, templateName, useKubernetesHarness } from './kubernetes-harness.js'
import { type RecordingApiProxy, startRecordingApiProxy } from './recording-api-proxy.js'
import { startWithholdingApiFront, type WithholdingApiFront } from './withholding-api-front.js'

const WS_TEMPLATE = 'ws-block'
const BOUND_MS = 1000

const h = useKubernetesHarness({ namespacePrefix: 'k8s-ws' })
const handles: KubernetesWorkspace[] = []
let recorder: RecordingApiProxy
let front: WithholdingApiFront

beforeAll(async () => {
	await h.cluster.api.create(
		paths.templates(h.namespace),
		sandboxTemplate(WS_TEMPLATE, { workspace: 'block' }),
	)
	recorder = await startRecordingApiProxy(h.cluster.access)
	front = await startWithholdingApiFront(h.cluster.access)
})

afterAll(async () => {
	await Promise.allSettled(
		handles.map((handle) => handle.destroy({ deleteDisk: true, flush: false })),
	)
	await recorder?.close()
	await front?.close()
})

function config(overrides: Partial<KubernetesBackendConfig> = {}): KubernetesBackendConfig {
	return h.config({ sandboxTemplateName: WS_TEMPLATE, ...overrides })
}

async function open(
	workspaceId: string,
	options: Partial<KubernetesWorkspaceOptions> = {},
	overrides: Partial<KubernetesBackendConfig> = {},
): Promise<KubernetesWorkspace> {
	const workspace = await createKubernetesWorkspace(config(overrides), { workspaceId, ...options })
	handles.push(workspace)
	return workspace
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

const pvcNames = async (): Promise<string[]> =>
	(await listItems(h.cluster.api, paths.pvcs(h.namespace))).map((pvc) => pvc.metadata.name)

const podOf = (name: string) => h.cluster.api.get<KubeObject>(paths.pod(h.namespace, name))

describe('Kubernetes workspaces on the local cluster', () => {
	it('keeps the bytes across suspend (flushed) and resume on a new pod uid, onGuestRestart silent', async () => {
		const workspace = await open('bytes')
		expect(workspace.origin).toBe('created')
		const restarts: unknown[] = []
		workspace.onGuestRestart((event) => restarts.push(event))
		const content = new Uint8Array(1 << 20).map((_, i) => (i * 31 + 7) % 251)
		await workspace.writeFile('data.bin', content)
		const before = (await podOf('namzu-ws-bytes')).metadata.uid
		await workspace.suspend()
		expect(workspace.suspended).toBe(true)
		await expect(workspace.readFile('data.bin')).rejects.toBeInstanceOf(
			KubernetesWorkspaceSuspendedError,
		)
		expect(await pvcNames()).toContain('workspace-namzu-ws-bytes')
		await workspace.resume()
		const after = (await podOf('namzu-ws-bytes')).metadata.uid
		expect(after).not.toBe(before)
		expect(sha(await workspace.readFile('data.bin'))).toBe(sha(content))
		const mounted = await workspace.exec('sh', [
			'-c',
			'awk \'$2 == "/workspace" { print $3 }\' /proc/mounts',
		])
		expect(mounted.stdout.trim()).toBe('ext4')
		// The handle's own suspend/resume is not a guest restart.
		expect(restarts).toEqual([])
		expect(workspace.identity.podUid).toBe(after)
	})

	it('adopts a running workspace from a second handle while a third suspends it', async () => {
		const first = await open('shared')
		await first.writeFile('mark', 'one')
		const second = await open('shared')
		expect(second.origin).toBe('adopted-running')
		expect((await second.readFile('mark')).toString()).toBe('one')
		const third = await open('shared')
		await third.suspend({ flush: false })
		expect(third.suspended).toBe(true)
		// The others' session is gone with the pod: their call fails at the transport, and the one
		// re-read it pays for names the suspension (the transport failure is its cause).
		const failed = await second.exec('true').catch((error: unknown) => error)
		expect(failed).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect((failed as KubernetesWorkspaceSuspendedError).noticedBy).toBe('transport')
		expect((failed as Error).cause).toBeInstanceOf(Error)
		const fourth = await open('shared')
		expect(fourth.origin).toBe('resumed')
		expect((await fourth.readFile('mark')).toString()).toBe('one')
	})

	it('a failed start on an adopted running workspace writes nothing to the cluster', async () => {
		await open('adopt-fail')
		recorder.clear()
		const access = { server: recorder.server, getToken: async () => h.cluster.access.token }
		// A budget already spent: the adopt reaches the pod wait and gives up there.
		const error = await createKubernetesWorkspace(config({ access, readyTimeoutMs: 1 }), {
			workspaceId: 'adopt-fail',
		}).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(ReadinessPollTimeout)
		const writes = recorder.requests.filter((entry) => !entry.startsWith('GET '))
		expect(writes).toEqual([
			`POST /apis/agents.x-k8s.io/v1beta1/namespaces/${h.namespace}/sandboxes`,
		])
		const sandbox = await h.cluster.api.get<KubeObject>(
			paths.sandbox(h.namespace, 'namzu-ws-adopt-fail'),
		)
		expect(sandbox.spec?.operatingMode ?? 'Running').toBe('Running')
	})

	it('a suspend whose patch answer is withheld fails at the request bound, keeps the state it had, and a retry suspends', async () => {
		const access = { server: front.server, getToken: async () => h.cluster.access.token }
		const workspace = await open('withheld', {}, { access, apiRequestTimeoutMs: BOUND_MS })
		front.withhold({ method: 'PATCH', pathIncludes: '/sandboxes/namzu-ws-withheld' })
		const started = performance.now()
		const suspending = workspace.suspend({ flush: false })
		const joined = workspace.destroy({ flush: false })
		const error = await suspending.catch((e: unknown) => e)
		await joined.catch(() => undefined)
		const elapsed = performance.now() - started
		expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
		expect(elapsed).toBeLessThan(10 * BOUND_MS)
		expect(workspace.suspended).toBe(false)
		await workspace.suspend({ flush: false })
		expect(workspace.suspended).toBe(true)
		const patchesSent = front.log.filter((entry) => entry.request.startsWith('PATCH ')).length
		expect(patchesSent).toBe(2)
	})

	it('suspend({ quiesce: true }) stops a setsid child before the Suspended patch', async () => {
		const workspace = await open('quiesce')
		// The child stamps the moment it is told to stop; the patch stamps the moment it was sent.
		const started = await workspace.exec('sh', [
			'-c',
			'setsid -f sh -c \'trap "date +%s%3N > /workspace/stopped-at; exit 0" TERM; while :; do sleep 0.1; done\' </dev/null >/dev/null 2>&1; echo ok',
		])
		expect(started.stdout.trim()).toBe('ok')
		await workspace.suspend({ quiesce: true })
		const suspended = await h.cluster.api.get<KubeObject>(
			paths.sandbox(h.namespace, 'namzu-ws-quiesce'),
		)
		const patchedAt = Date.parse(
			suspended.metadata.annotations?.['sandbox.namzu.ai/operating-mode-changed-at'] ?? '',
		)
		await workspace.resume()
		const stoppedAt = Number((await workspace.readFile('stopped-at')).toString().trim())
		expect(stoppedAt).toBeGreaterThan(0)
		expect(stoppedAt).toBeLessThanOrEqual(patchedAt)
	})

	it('destroy() keeps the Sandbox and its disk; destroy({ deleteDisk: true }) removes both', async () => {
		const workspace = await open('keep')
		await workspace.destroy()
		expect(workspace.suspended).toBe(true)
		const sandbox = await h.cluster.api.get<KubeObject>(paths.sandbox(h.namespace, 'namzu-ws-keep'))
		expect(sandbox.spec?.operatingMode).toBe('Suspended')
		expect(await pvcNames()).toContain('workspace-namzu-ws-keep')
		await workspace.destroy({ deleteDisk: true })
		expect(workspace.suspended).toBe(false)
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, 'namzu-ws-keep'), {
			timeoutMs: 60_000,
		})
		await waitGone(h.cluster.api, paths.pvc(h.namespace, 'workspace-namzu-ws-keep'), {
			timeoutMs: 60_000,
		})
	})

	it('the disk, mismatch and name refusals create nothing', async () => {
		const before = (await listSandboxes(h.cluster, h.namespace)).length
		// The harness template's claim is a Filesystem mount.
		await expect(open('fs-disk', { sandboxTemplateName: templateName })).rejects.toBeInstanceOf(
			KubernetesWorkspaceDiskError,
		)
		await expect(open('Bad_Id')).rejects.toBeInstanceOf(SandboxArgumentError)
		await h.cluster.api.create(
			paths.templates(h.namespace),
			sandboxTemplate('ws-other', { workspace: 'block' }),
		)
		const existing = await open('mismatch')
		await existing.suspend({ flush: false })
		const after = (await listSandboxes(h.cluster, h.namespace)).length
		expect(after).toBe(before + 1)
		await expect(open('mismatch', { sandboxTemplateName: 'ws-other' })).rejects.toBeInstanceOf(
			KubernetesWorkspaceMismatchError,
		)
		await expect(open('mismatch', {}, {})).resolves.toBeDefined()
		expect((await listSandboxes(h.cluster, h.namespace)).length).toBe(after)
	})

	it('R15-7488339-04/17/19/20: a suspended workspace without the egress profile is refused and stays Suspended; refreshPodTemplate wakes it with the label on its pod template and its pod', async () => {
		const egress: KubernetesEgressConfig = { policy: { kind: 'deny-all' }, profile: 'none' }
		const resolved = resolveKubernetesBackendConfig(config({ egress })).egress
		if (!resolved) throw new Error('no egress')
		// The operator applied the profile's own policy (exactly the backend's translation).
		await h.cluster.api.create(
			paths.networkPolicies(h.namespace),
			translatedPolicyObject(translateEgressPolicy(resolved, WS_TEMPLATE), h.namespace),
		)
		const plain = await open('profile')
		await plain.writeFile('kept.txt', 'before the profile')
		await plain.suspend()
		const sandboxPath = paths.sandbox(h.namespace, plain.id)
		const asleep = await h.cluster.api.get<KubeObject>(sandboxPath)
		const error = await open('profile', {}, { egress }).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		expect(error).toMatchObject({ field: 'egressProfile' })
		const after = await h.cluster.api.get<KubeObject>(sandboxPath)
		// Nothing was written: the same spec and annotations of ours (the controller clears its own
		// pod-name annotation on its schedule), still asleep.
		const ours = (object: KubeObject) =>
			Object.entries(object.metadata.annotations ?? {}).filter(([key]) =>
				key.startsWith('sandbox.namzu.ai/'),
			)
		expect(after.spec).toEqual(asleep.spec)
		expect(ours(after)).toEqual(ours(asleep))
		expect((after.spec as { operatingMode?: string }).operatingMode).toBe('Suspended')

		const refreshed = await open('profile', { refreshPodTemplate: true }, { egress })
		expect(refreshed.origin).toBe('resumed')
		const labels = (object: KubeObject | undefined) =>
			(object?.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {}
		const woken = await h.cluster.api.get<KubeObject>(sandboxPath)
		const podTemplate = (woken.spec as { podTemplate?: KubeObject }).podTemplate
		expect(labels(podTemplate)['sandbox.namzu.ai/egress-profile']).toBe('none')
		expect(labels(await podOf(plain.id))['sandbox.namzu.ai/egress-profile']).toBe('none')
		expect(new TextDecoder().decode(await refreshed.readFile('kept.txt'))).toBe(
			'before the profile',
		)
		// Carrying the profile now, a plain adopt with it passes.
		expect((await open('profile', {}, { egress })).origin).toBe('adopted-running')
	})
})
