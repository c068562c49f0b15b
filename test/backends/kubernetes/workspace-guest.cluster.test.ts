// The workspace's guest on the local cluster (real kube-apiserver, real agent-sandbox controller,
// the process kubelet): a pod deleted under the handle is followed once and the call succeeds
// against the replacement (`pod-replaced`); an agent killed in place (restartCount + 1) is
// `container-restarted`; an agent frozen under a command keeps the workspace after the
// unconfirmed cancellation and the notice says the agent is unreachable; a detached command and a
// persistent terminal outlive the host process that started them (SIGKILLed) and another process
// attaches by id.
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import {
	type KubernetesWorkspace,
	type KubernetesWorkspaceCancellationNotice,
	type KubernetesWorkspaceOptions,
	RemoteCancellationUnknownError,
} from '../../../src/index.js'
import type { KubernetesGuestRestartEvent } from '../../../src/kubernetes-entry.js'
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
	it('R15-260547f-01/06: a detached command outlives the host process that started it (SIGKILLed) and a second process picks it up by id, output complete', async () => {
		const executionId = `exec_${randomUUID()}`
		await runHostProcessUntilStarted(
			'handover',
			`
			let seen = ''
			workspace.exec('/bin/sh', ['-c', 'echo first; sleep 3; echo second'], {
				executionId: given.executionId,
				detach: true,
				onOutput: (chunk) => {
					seen += chunk.data
					if (seen.includes('first')) process.stdout.write('started\\n')
				},
			}).catch((error) => process.stderr.write('exec: ' + error + '\\n'))
		`,
			{ executionId },
		)
		const second = await open('handover')
		expect(second.origin).toBe('adopted-running')
		let output = ''
		const result = await second.attachExecution(executionId, {
			fromOffset: 0,
			onOutput: (chunk) => {
				output += chunk.data
			},
		})
		expect(result.exitCode).toBe(0)
		expect(output).toBe('first\nsecond\n')
		expect(second.suspended).toBe(false)
	})

	it('R15-b3db254-04/07: a persistent terminal outlives the host process that opened it (SIGKILLed); a second process lists it, replays it and types into it', async () => {
		const sessionId = `term-${randomUUID().slice(0, 8)}`
		await runHostProcessUntilStarted(
			'terminal-handover',
			`
			const terminal = await workspace.openTerminal({
				size: { cols: 80, rows: 24 },
				sessionId: given.sessionId,
				persistent: true,
			})
			let seen = ''
			terminal.onData((data) => {
				seen += data
				if (/first-2\\r\\n/.test(seen)) process.stdout.write('started\\n')
			})
			terminal.write('echo first-$((1+1))\\n')
		`,
			{ sessionId },
		)
		const second = await open('terminal-handover')
		expect(second.origin).toBe('adopted-running')
		const [summary] = (await second.listSessions()).filter((row) => row.sessionId === sessionId)
		expect(summary).toMatchObject({ state: 'running', kind: 'terminal' })
		const attached = await second.attachTerminal(sessionId, { fromOffset: 0 })
		let text = ''
		attached.onData((data) => {
			text += data
		})
		await expect.poll(() => text, { timeout: 20_000 }).toMatch(/first-2\r\n/)
		attached.write('echo second-$((2+2))\n')
		await expect.poll(() => text, { timeout: 20_000 }).toMatch(/second-4\r\n/)
		await attached.detach()
	})
})

/**
 * A first host process — the built package, exactly as a user's process loads it — opens the
 * workspace `workspaceId`, runs `body` (which has `workspace` and `given`, and prints `started`
 * once its work is under way), and is SIGKILLed as soon as it did.
 */
async function runHostProcessUntilStarted(
	workspaceId: string,
	body: string,
	extra: Record<string, string>,
): Promise<void> {
	const config = h.config({ sandboxTemplateName: WS_TEMPLATE })
	const access = h.cluster.access
	const dist = pathToFileURL(join(import.meta.dirname, '..', '..', '..', 'dist', 'index.js')).href
	const script = `
		const { createKubernetesWorkspace } = await import(${JSON.stringify(dist)})
		const given = JSON.parse(process.argv[1])
		const token = given.token
		const workspace = await createKubernetesWorkspace(
			{ ...given.config, access: { server: given.server, ca: given.ca, getToken: () => token } },
			{ workspaceId: given.workspaceId },
		)
		${body}
		setInterval(() => {}, 1000)
	`
	const { access: _omit, ...plain } = config
	const child = spawn(
		process.execPath,
		[
			'--input-type=module',
			'-e',
			script,
			JSON.stringify({
				config: plain,
				server: access.server,
				ca: access.caPem,
				token: access.token,
				workspaceId,
				...extra,
			}),
		],
		{ stdio: ['ignore', 'pipe', 'pipe'] },
	)
	const exited = new Promise((resolve) => child.once('exit', resolve))
	let errors = ''
	child.stderr?.on('data', (chunk: Buffer) => {
		errors += chunk.toString()
	})
	await new Promise<void>((resolve, reject) => {
		const timer = setTimeout(
			() => reject(new Error(`no output in 60 s; stderr: ${errors}`)),
			60_000,
		)
		let out = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			out += chunk.toString()
			if (out.includes('started')) {
				clearTimeout(timer)
				resolve()
			}
		})
		child.once('exit', (code) =>
			reject(new Error(`the first host process exited ${code} early: ${errors}`)),
		)
	})
	child.kill('SIGKILL')
	await exited
}
