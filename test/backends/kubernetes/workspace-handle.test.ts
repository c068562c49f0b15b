// The workspace handle against a scripted API and real guest agents (scripted-workspace-api.ts):
// the request sequence of create, adopt, suspend, resume and destroy, the failure paths (each
// pinned by what it did NOT send), the flush and quiesce steps of a suspend, and the gate while
// suspended.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
	KubernetesAcquireError,
	KubernetesApiTimeoutError,
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesFlushUnconfirmedError,
	KubernetesFlushUnreachableError,
	KubernetesFlushUnsupportedError,
	KubernetesPrivilegeProbeError,
	KubernetesQuiesceUnconfirmedError,
	KubernetesQuiesceUnsupportedError,
	KubernetesSandboxDestroyedError,
	KubernetesUnenforceableEgressPolicyError,
	type KubernetesWorkspace,
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
	KubernetesWorkspaceSuspendedError,
	KubernetesWorkspaceSuspendTimeoutError,
	ReadinessPollTimeout,
	SandboxArgumentError,
} from '../../../src/index.js'
import { statusError } from './scripted-api-port.js'
import { blockTemplate, type ScriptedWorkspaceApi } from './scripted-workspace-api.js'
import { handles, open, workspaceApi } from './workspace-handle-fixture.js'

/** The log with consecutive repeats of one poll read folded into one entry. */
function collapse(log: readonly string[]): string[] {
	return log.filter((entry, index) => entry !== log[index - 1])
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const SANDBOXES = '/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes'
const SANDBOX = `${SANDBOXES}/namzu-ws-w1`
const POD = '/api/v1/namespaces/ns/pods/namzu-ws-w1'
const TEMPLATE =
	'/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxtemplates/ws-template'
const writes = (api: ScriptedWorkspaceApi) =>
	api.calls.filter((call) => call.verb !== 'GET' && call.verb !== 'LIST')
const patches = (api: ScriptedWorkspaceApi) =>
	api.calls
		.filter((call) => call.verb === 'PATCH')
		.map((call) => (call.body as { spec: { operatingMode: string } }).spec.operatingMode)

/** A promise the test resolves, for holding a request in flight. */
function gate(): { promise: Promise<void>; open: () => void } {
	let open: () => void = () => {}
	const promise = new Promise<void>((resolve) => {
		open = resolve
	})
	return { promise, open }
}

/** Refuses the pod GET with a 403 while switched on (a read the client does not retry). */
function podReadRefusal(initially: boolean): {
	intercept: (call: { verb: string; path: string }) => undefined
	refuse: (on: boolean) => void
} {
	let on = initially
	return {
		intercept: (call) => {
			if (on && call.verb === 'GET' && call.path === POD) throw statusError('GET', call.path, 403)
			return undefined
		},
		refuse: (value) => {
			on = value
		},
	}
}

/** Counts flush ops through the guest's flush override (one line per flush, on the disk). */
const COUNTING_FLUSH = { NAMZU_AGENT_FLUSH_COMMAND: 'echo flushed >> "$1/.flushes"' }
async function flushes(api: ScriptedWorkspaceApi): Promise<number> {
	const text = await readFile(join(api.model.workspace ?? '', '.flushes'), 'utf8').catch(() => '')
	return text.split('\n').filter((line) => line !== '').length
}

describe('Kubernetes workspace: create, suspend, resume', () => {
	it('creates, serves exec and files, suspends after a flush, refuses while suspended, resumes on a new pod uid with the same bytes', async () => {
		const api = await workspaceApi({ guestEnv: COUNTING_FLUSH })
		const workspace = await open(api)
		expect(workspace.origin).toBe('created')
		expect(workspace.id).toBe('namzu-ws-w1')
		const content = new Uint8Array(4096).map((_, i) => (i * 7) % 256)
		await workspace.writeFile('data.bin', content)
		expect((await workspace.exec('cat', ['data.bin'])).exitCode).toBe(0)
		const firstPod = api.model.pod?.metadata.uid
		const firstIp = api.model.pod?.status?.podIP
		await workspace.suspend()
		expect(await flushes(api)).toBe(1)
		expect(workspace.suspended).toBe(true)
		expect(workspace.status).toBe('destroyed')
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		await workspace.resume()
		expect(workspace.suspended).toBe(false)
		expect(workspace.status).toBe('ready')
		expect(api.model.pod?.metadata.uid).not.toBe(firstPod)
		expect(api.model.pod?.status?.podIP).not.toBe(firstIp)
		expect(sha(await workspace.readFile('data.bin'))).toBe(sha(content))
		expect(workspace.origin).toBe('created')
		expect(collapse(api.log())).toEqual([
			`GET ${TEMPLATE}`,
			`POST ${SANDBOXES}`,
			`GET ${SANDBOX}`,
			`GET ${POD}`,
			`PATCH ${SANDBOX}`,
			`GET ${POD}`,
			`GET ${SANDBOX}`,
			`PATCH ${SANDBOX}`,
			`GET ${POD}`,
		])
		expect(patches(api)).toEqual(['Suspended', 'Running'])
		for (const call of api.calls.filter((entry) => entry.verb === 'PATCH')) {
			const stamp = (call.body as { metadata: { annotations: Record<string, string> } }).metadata
				.annotations['sandbox.namzu.ai/operating-mode-changed-at']
			expect(Number.isNaN(Date.parse(stamp ?? ''))).toBe(false)
		}
		const created = api.calls.find((call) => call.verb === 'POST')?.body as {
			spec: Record<string, unknown>
			metadata: { name: string }
		}
		expect(created.metadata.name).toBe('namzu-ws-w1')
		expect(created.spec).not.toHaveProperty('shutdownTime')
		expect(created.spec).not.toHaveProperty('shutdownPolicy')
		expect(created.spec.volumeClaimTemplates).toEqual(blockTemplate().spec?.volumeClaimTemplates)
	})

	it('serves walkFiles, ranged readFile and readFileStream through the same gate', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await workspace.writeFile('dir/a.txt', 'abcdefgh')
		await workspace.writeFile('dir/b.txt', 'x')
		const walked: string[] = []
		for await (const entry of workspace.walkFiles('dir', { maxEntries: 10 }))
			walked.push(entry.path)
		expect(walked.map((path) => path.split('/').pop()).sort()).toEqual(['a.txt', 'b.txt'])
		expect((await workspace.readFile('dir/a.txt', { offset: 2, length: 3 })).toString()).toBe('cde')
		const chunks: Buffer[] = []
		for await (const chunk of workspace.readFileStream('dir/a.txt')) chunks.push(chunk)
		expect(Buffer.concat(chunks).toString()).toBe('abcdefgh')
	})

	it("waits on resume, under 'pod-ip', for a Pending pod to receive its IP within the budget", async () => {
		let withoutIp = 0
		const api = await workspaceApi({
			intercept: (call, model) => {
				if (call.verb === 'GET' && call.path === POD && withoutIp > 0 && model.pod) {
					withoutIp--
					return { ...model.pod, status: { phase: 'Pending' } }
				}
				return undefined
			},
		})
		const workspace = await open(api)
		await workspace.suspend({ flush: false })
		withoutIp = 5
		await workspace.resume()
		expect(withoutIp).toBe(0)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('ignores warmPoolName: a workspace is always a POSTed Sandbox, never a claim', async () => {
		const api = await workspaceApi()
		await open(api, {}, { warmPoolName: 'pool' })
		expect(api.log().some((entry) => entry.includes('sandboxclaims'))).toBe(false)
		expect(api.log()).toContain(`POST ${SANDBOXES}`)
	})

	it('suspend({ flush: false }) sends the same requests as a flushing suspend and no flush op', async () => {
		const api = await workspaceApi({ guestEnv: COUNTING_FLUSH })
		const workspace = await open(api)
		api.calls.splice(0)
		await workspace.suspend({ flush: false })
		expect(await flushes(api)).toBe(0)
		expect(collapse(api.log())).toEqual([`PATCH ${SANDBOX}`, `GET ${POD}`])
	})

	it('returns early from suspend() and destroy() on a suspended workspace, sending nothing', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await workspace.suspend()
		const before = api.calls.length
		await workspace.suspend()
		await workspace.destroy()
		await workspace.destroy({ deleteDisk: false })
		expect(api.calls.length).toBe(before)
	})

	it('runs one flight for concurrent suspend(), suspend() and destroy(): one patch', async () => {
		const hold = gate()
		const api = await workspaceApi({
			before: (call) => (call.verb === 'PATCH' ? hold.promise : undefined),
		})
		const workspace = await open(api)
		const all = Promise.all([workspace.suspend(), workspace.suspend(), workspace.destroy()])
		await new Promise((resolve) => setTimeout(resolve, 50))
		hold.open()
		await all
		expect(patches(api)).toEqual(['Suspended'])
		expect(workspace.suspended).toBe(true)
	})

	it('lets a call in flight when suspend() starts run on, and refuses new calls at once', async () => {
		const hold = gate()
		const api = await workspaceApi({
			before: (call) => (call.verb === 'PATCH' ? hold.promise : undefined),
		})
		const workspace = await open(api)
		const running = workspace.exec('sh', ['-c', 'sleep 0.2; echo done'])
		await new Promise((resolve) => setTimeout(resolve, 50))
		const suspending = workspace.suspend({ flush: false })
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		const result = await running
		expect(result.stdout.trim()).toBe('done')
		hold.open()
		await suspending
	})

	it('reaps the terminals this handle opened before it suspends', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		const terminal = await workspace.openTerminal({
			command: 'sleep',
			args: ['60'],
			size: { cols: 80, rows: 24 },
		})
		await workspace.suspend({ flush: false })
		await expect(
			Promise.race([
				terminal.exited.then(
					() => 'exited',
					() => 'exited',
				),
				new Promise((r) => setTimeout(() => r('running'), 3000)),
			]),
		).resolves.toBe('exited')
	})

	it('resume() on a running workspace is a no-op; resume() binds a pod another process woke, sending no Running patch', async () => {
		const api = await workspaceApi()
		const first = await open(api)
		await first.resume()
		expect(patches(api)).toEqual([])
		await first.suspend({ flush: false })
		const second = await open(api)
		expect(second.origin).toBe('resumed')
		api.calls.splice(0)
		await first.resume()
		expect(patches(api)).toEqual([])
		expect(collapse(api.log())).toEqual([`GET ${SANDBOX}`, `GET ${POD}`])
		expect((await first.exec('true')).exitCode).toBe(0)
	})
})

describe('Kubernetes workspace: flush and quiesce during a suspend', () => {
	it('rejects with KubernetesFlushUnconfirmedError and sends no patch when the guest answered but could not confirm', async () => {
		const api = await workspaceApi({ guestEnv: { NAMZU_AGENT_FLUSH_COMMAND: 'false' } })
		const workspace = await open(api)
		const error = await workspace.suspend().catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesFlushUnconfirmedError)
		expect((error as KubernetesFlushUnconfirmedError).guestMessage).not.toBe('')
		expect(patches(api)).toEqual([])
		expect(workspace.suspended).toBe(false)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('goes on and tells onFlushUnsupported when the guest cannot flush', async () => {
		const api = await workspaceApi({
			guestEnv: { NAMZU_AGENT_FLUSH_COMMAND: 'namzu-no-such-flush-program' },
		})
		const told: unknown[] = []
		const workspace = await open(api, { onFlushUnsupported: (error) => told.push(error) })
		await workspace.suspend()
		expect(told).toHaveLength(1)
		expect(told[0]).toBeInstanceOf(KubernetesFlushUnsupportedError)
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('goes on and tells onFlushUnreachable, with the transport error as cause, when the guest cannot be reached', async () => {
		const api = await workspaceApi()
		const told: Error[] = []
		const workspace = await open(
			api,
			{ onFlushUnreachable: (error) => told.push(error) },
			{},
			{ transportOptions: { connectRetryBudgetMs: 300 } },
		)
		await api.crashGuest()
		await workspace.suspend()
		expect(told).toHaveLength(1)
		expect(told[0]).toBeInstanceOf(KubernetesFlushUnreachableError)
		expect(told[0]?.cause).toBeInstanceOf(Error)
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('passes flush.timeoutMs to the guest and refuses a malformed flush request by parameter', async () => {
		const api = await workspaceApi({ guestEnv: COUNTING_FLUSH })
		const workspace = await open(api)
		await expect(workspace.suspend({ flush: { timeoutMs: -1 } })).rejects.toMatchObject({
			name: 'SandboxArgumentError',
			parameter: 'options.flush.timeoutMs',
		})
		expect(patches(api)).toEqual([])
		await workspace.suspend({ flush: { timeoutMs: 20_000 } })
		expect(await flushes(api)).toBe(1)
	})

	it('reports a narrowed quiesce scan through onQuiesceNarrowed and suspends', async () => {
		const api = await workspaceApi()
		const narrowed: unknown[] = []
		const workspace = await open(api, { onQuiesceNarrowed: (report) => narrowed.push(report) })
		await workspace.suspend({ quiesce: true, flush: false })
		expect(narrowed).toEqual([expect.objectContaining({ scope: 'owned-sessions' })])
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('refuses a joiner wanting a quiesce or a flush the in-flight suspend skipped; destroy({ flush: false }) joins', async () => {
		const hold = gate()
		const api = await workspaceApi({
			before: (call) => (call.verb === 'PATCH' ? hold.promise : undefined),
		})
		const workspace = await open(api)
		const inFlight = workspace.suspend({ flush: false })
		await new Promise((resolve) => setTimeout(resolve, 50))
		const quiesced = await workspace
			.suspend({ quiesce: true, flush: false })
			.catch((e: unknown) => e)
		expect(quiesced).toBeInstanceOf(KubernetesQuiesceUnconfirmedError)
		expect(quiesced).toMatchObject({
			reason: 'suspend-already-in-flight',
			specReason: 'suspend_already_in_flight',
		})
		const flushed = await workspace.destroy().catch((e: unknown) => e)
		expect(flushed).toBeInstanceOf(KubernetesFlushUnconfirmedError)
		expect(flushed).toMatchObject({
			reason: 'suspend-already-in-flight',
			specReason: 'suspend_already_in_flight',
		})
		const joined = workspace.destroy({ flush: false })
		hold.open()
		await Promise.all([inFlight, joined])
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('suspends and tells onQuiesceUnsupported when the guest does not advertise quiesce; an explicit quiesce() refuses', async () => {
		const api = await workspaceApi({
			rewriteReply: {
				healthz: (reply) => ({
					...reply,
					features: (reply.features as string[]).filter((feature) => feature !== 'quiesce'),
				}),
			},
		})
		const told: unknown[] = []
		const workspace = await open(api, { onQuiesceUnsupported: (error) => told.push(error) })
		await expect(workspace.quiesce()).rejects.toBeInstanceOf(KubernetesQuiesceUnsupportedError)
		await workspace.suspend({ quiesce: true, flush: false })
		expect(told).toHaveLength(1)
		expect(told[0]).toBeInstanceOf(KubernetesQuiesceUnsupportedError)
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('sends no patch when the quiesce could not be confirmed; the workspace keeps running and admitting calls', async () => {
		const api = await workspaceApi({
			rewriteReply: {
				quiesce: () => ({
					ok: false,
					error: 'quiesce_unconfirmed',
					message: 'pid 4242 outlived SIGKILL',
					pid: 4242,
				}),
			},
		})
		const workspace = await open(api)
		const error = await workspace.suspend({ quiesce: true }).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesQuiesceUnconfirmedError)
		expect(error).toMatchObject({ pid: 4242 })
		expect(patches(api)).toEqual([])
		expect(workspace.suspended).toBe(false)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('flush() and quiesce() on the handle answer the guest reports', async () => {
		const api = await workspaceApi({ guestEnv: COUNTING_FLUSH })
		const workspace = await open(api)
		const report = await workspace.flush()
		expect(typeof report.durationMs).toBe('number')
		expect((await workspace.quiesce()).scope).toBe('owned-sessions')
		expect(await flushes(api)).toBe(1)
	})
})

describe('Kubernetes workspace: destroy', () => {
	it('destroy({ deleteDisk: true }) DELETEs; afterwards a plain destroy() is a no-op, suspend() throws, calls are refused', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		await workspace.destroy({ deleteDisk: true })
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'DELETE'])
		expect(workspace.suspended).toBe(false)
		expect(workspace.status).toBe('destroyed')
		const before = api.calls.length
		await workspace.destroy()
		await workspace.destroy({ deleteDisk: true })
		expect(api.calls.length).toBe(before)
		await expect(workspace.suspend()).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesSandboxDestroyedError)
	})

	it('a failed DELETE is not recorded: suspended reads true, nothing is admitted, a retry DELETEs again', async () => {
		let refuse = true
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'DELETE' && refuse) throw statusError('DELETE', call.path, 500)
				return undefined
			},
		})
		const workspace = await open(api)
		await expect(workspace.destroy({ deleteDisk: true })).rejects.toMatchObject({ status: 500 })
		expect(workspace.suspended).toBe(true)
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		refuse = false
		await workspace.destroy({ deleteDisk: true })
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'DELETE', 'DELETE'])
	})

	it('resumes after a failed DELETE instead of retrying it', async () => {
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'DELETE') throw statusError('DELETE', call.path, 500)
				return undefined
			},
		})
		const workspace = await open(api)
		await expect(workspace.destroy({ deleteDisk: true })).rejects.toMatchObject({ status: 500 })
		await workspace.resume()
		expect((await workspace.exec('true')).exitCode).toBe(0)
		// The object was never moved: the resume read it Running and sent no patch.
		expect(patches(api)).toEqual([])
	})
})

describe('Kubernetes workspace: failed transitions leave the state they found', () => {
	it('a refused suspend patch leaves the workspace running and serving; a retry patches again', async () => {
		let refuse = true
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'PATCH' && refuse) throw statusError('PATCH', call.path, 403)
				return undefined
			},
		})
		const workspace = await open(api)
		await expect(workspace.suspend()).rejects.toMatchObject({ status: 403 })
		expect(workspace.suspended).toBe(false)
		expect((await workspace.exec('true')).exitCode).toBe(0)
		refuse = false
		await workspace.suspend()
		expect(patches(api)).toEqual(['Suspended', 'Suspended'])
	})

	it('a suspend whose patch timed out restores the running state; a retried suspend sends the same patch', async () => {
		let withhold = true
		const api = await workspaceApi({
			intercept: (call) => {
				if (call.verb === 'PATCH' && withhold) {
					throw new KubernetesApiTimeoutError('PATCH', call.path, 1000)
				}
				return undefined
			},
		})
		const workspace = await open(api)
		await expect(workspace.suspend({ flush: false })).rejects.toBeInstanceOf(
			KubernetesApiTimeoutError,
		)
		expect(workspace.suspended).toBe(false)
		expect(workspace.status).toBe('ready')
		withhold = false
		await workspace.suspend({ flush: false })
		const bodies = api.calls
			.filter((call) => call.verb === 'PATCH')
			.map((call) => (call.body as { spec: object }).spec)
		expect(bodies).toEqual([{ operatingMode: 'Suspended' }, { operatingMode: 'Suspended' }])
	})

	it('a pod that outlives the wait: KubernetesWorkspaceSuspendTimeoutError, no call admitted, a retry patches again, a resume binds the new pod', async () => {
		let outlive = true
		const api = await workspaceApi({ podOutlivesSuspend: () => outlive })
		const workspace = await open(api, {}, { readyTimeoutMs: 2000 })
		const error = await workspace.suspend({ flush: false }).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesWorkspaceSuspendTimeoutError)
		expect(error).toMatchObject({ podName: 'namzu-ws-w1', timeoutMs: 2000 })
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect(workspace.suspended).toBe(true)
		await expect(workspace.suspend({ flush: false })).rejects.toBeInstanceOf(
			KubernetesWorkspaceSuspendTimeoutError,
		)
		expect(patches(api)).toEqual(['Suspended', 'Suspended'])
		outlive = false
		// The Sandbox is Suspended: the resume wakes it; the controller's replacement replaces the
		// terminating pod, whose uid the resume never binds.
		const retired = api.model.pod?.metadata.uid
		await workspace.resume()
		expect(api.model.pod?.metadata.uid).not.toBe(retired)
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('a failed resume writes its Suspended patch back, reads suspended, and a later resume is the way back', async () => {
		const refusal = podReadRefusal(false)
		const api = await workspaceApi({ intercept: refusal.intercept })
		const workspace = await open(api)
		await workspace.suspend({ flush: false })
		refusal.refuse(true)
		await expect(workspace.resume()).rejects.toMatchObject({ status: 403 })
		expect(patches(api)).toEqual(['Suspended', 'Running', 'Suspended'])
		expect(workspace.suspended).toBe(true)
		refusal.refuse(false)
		await workspace.resume()
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('a resume that finds another process already woke the workspace and then fails writes nothing', async () => {
		const refusal = podReadRefusal(false)
		const api = await workspaceApi({ intercept: refusal.intercept })
		const first = await open(api)
		await first.suspend({ flush: false })
		await open(api)
		api.calls.splice(0)
		refusal.refuse(true)
		await expect(first.resume()).rejects.toMatchObject({ status: 403 })
		expect(writes(api)).toEqual([])
		expect(first.suspended).toBe(true)
	})

	it("resume({ onStartFailure: 'leave' }) sends no patch back", async () => {
		const refusal = podReadRefusal(false)
		const api = await workspaceApi({ intercept: refusal.intercept })
		const workspace = await open(api)
		await workspace.suspend({ flush: false })
		refusal.refuse(true)
		await expect(workspace.resume({ onStartFailure: 'leave' })).rejects.toMatchObject({
			status: 403,
		})
		expect(patches(api)).toEqual(['Suspended', 'Running'])
		expect(workspace.suspended).toBe(true)
	})
})

describe('Kubernetes workspace: create failures and adoption', () => {
	it('adopts a running workspace from a second handle: adopted-running, no patch; a third handle suspends the pod both use, and their next call names the suspension (R15-7bf9425-13)', async () => {
		const api = await workspaceApi()
		const first = await open(api)
		api.calls.splice(0)
		const second = await open(api)
		expect(second.origin).toBe('adopted-running')
		expect(collapse(api.log())).toEqual([
			`GET ${TEMPLATE}`,
			`POST ${SANDBOXES}`,
			`GET ${SANDBOX}`,
			`GET ${POD}`,
		])
		expect((await second.exec('true')).exitCode).toBe(0)
		const third = await open(api)
		await third.suspend({ flush: false })
		const failed = await first.exec('true').catch((e: unknown) => e)
		// The call failed at the transport; the one re-read found the workspace suspended.
		expect(failed).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		expect((failed as KubernetesWorkspaceSuspendedError).noticedBy).toBe('transport')
		expect((failed as Error).cause).toBeInstanceOf(Error)
		expect(first.suspended).toBe(true)
	})

	it('adopts a suspended workspace by waking it: resumed, one Running patch; origin never changes', async () => {
		const api = await workspaceApi()
		const first = await open(api)
		await first.suspend({ flush: false })
		const second = await open(api)
		expect(second.origin).toBe('resumed')
		expect(patches(api)).toEqual(['Suspended', 'Running'])
		await second.suspend({ flush: false })
		await second.resume()
		expect(second.origin).toBe('resumed')
	})

	it('a failed start after adopting a running workspace writes nothing and rethrows', async () => {
		const refusal = podReadRefusal(false)
		const api = await workspaceApi({ intercept: refusal.intercept })
		await open(api)
		refusal.refuse(true)
		api.calls.splice(0)
		await expect(open(api)).rejects.toMatchObject({ status: 403 })
		expect(writes(api).map((call) => call.verb)).toEqual(['POST'])
		expect(api.model.sandbox?.spec.operatingMode).toBeUndefined()
	})

	it('a failed start on the created path suspends what it POSTed and rethrows the original; never deletes', async () => {
		const api = await workspaceApi({ intercept: podReadRefusal(true).intercept })
		await expect(open(api)).rejects.toMatchObject({ status: 403 })
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'PATCH'])
		expect(patches(api)).toEqual(['Suspended'])
		expect(api.model.sandbox).toBeDefined()
	})

	it('leaves one suspended Sandbox after a failed create, which the next call with the same id reuses', async () => {
		const refusal = podReadRefusal(true)
		const api = await workspaceApi({ intercept: refusal.intercept })
		await expect(open(api)).rejects.toMatchObject({ status: 403 })
		expect(api.model.sandbox?.spec.operatingMode).toBe('Suspended')
		refusal.refuse(false)
		const again = await open(api)
		expect(again.origin).toBe('resumed')
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'PATCH', 'POST', 'PATCH'])
	})

	it('adopts through the 409 when a POST that timed out had been committed', async () => {
		let timeOut = true
		const api = await workspaceApi({
			after: (call) => {
				if (call.verb === 'POST' && timeOut) {
					timeOut = false
					throw new KubernetesApiTimeoutError('POST', call.path, 1000)
				}
			},
		})
		await expect(open(api)).rejects.toBeInstanceOf(KubernetesApiTimeoutError)
		expect(api.model.sandbox).toBeDefined()
		const adopted = await open(api)
		expect(adopted.origin).toBe('adopted-running')
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'POST'])
	})

	it('fails an unreadable pod on the created path at the first read instead of polling the budget', async () => {
		const api = await workspaceApi({
			intercept: (call, model) =>
				call.verb === 'GET' && call.path === POD
					? { ...model.pod, metadata: { name: 'namzu-ws-w1' } }
					: undefined,
		})
		const error = await open(api).catch((e: unknown) => e)
		expect(error).toMatchObject({ name: 'KubernetesPodUnusableError', podName: 'namzu-ws-w1' })
		// One read, then the cleanup's (the uid its Suspended patch retires) and the patch itself.
		const log = api.log()
		const patchAt = log.indexOf(`PATCH ${SANDBOX}`)
		expect(log.slice(0, patchAt).filter((entry) => entry === `GET ${POD}`)).toHaveLength(2)
		expect(log.slice(patchAt + 1)).toEqual([])
	})

	it('runs the privilege probe on create and again on every resume', async () => {
		let privileged = true
		const api = await workspaceApi({ privileged: () => privileged })
		await expect(open(api)).rejects.toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(patches(api)).toEqual(['Suspended'])
		privileged = false
		const workspace = await open(api)
		await workspace.suspend({ flush: false })
		privileged = true
		await expect(workspace.resume()).rejects.toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(workspace.suspended).toBe(true)
		expect(patches(api)).toEqual(['Suspended', 'Running', 'Suspended', 'Running', 'Suspended'])
	})

	it('refuses an onStartFailure other than suspend or leave by parameter, before any request', async () => {
		const api = await workspaceApi()
		const error = await open(api, {
			onStartFailure: 'always' as unknown as 'leave',
		}).catch((e: unknown) => e)
		expect(error).toMatchObject({
			name: 'SandboxArgumentError',
			parameter: 'options.onStartFailure',
		})
		expect(api.calls).toEqual([])
	})

	it("onStartFailure: 'leave' sends no patch on a failed created start", async () => {
		const api = await workspaceApi({ intercept: podReadRefusal(true).intercept })
		await expect(open(api, { onStartFailure: 'leave' })).rejects.toMatchObject({ status: 403 })
		expect(writes(api).map((call) => call.verb)).toEqual(['POST'])
	})

	it('throws ReadinessPollTimeout itself (not KubernetesAcquireError) when the created Sandbox never reads Ready', async () => {
		const api = await workspaceApi({
			intercept: (call, model) =>
				call.verb === 'GET' && call.path === SANDBOX ? { ...model.sandbox, status: {} } : undefined,
		})
		const error = await open(api, {}, { readyTimeoutMs: 300 }).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(ReadinessPollTimeout)
		expect(error).not.toBeInstanceOf(KubernetesAcquireError)
		expect(patches(api)).toEqual(['Suspended'])
	})

	it('adopting a workspace whose only pod is terminating waits for the replacement and never binds the terminating uid', async () => {
		const api = await workspaceApi()
		await open(api)
		const old = api.model.pod
		const oldUid = old?.metadata.uid
		api.model.pod = {
			...old,
			metadata: { ...old?.metadata, deletionTimestamp: new Date().toISOString() },
		} as typeof old
		const replace = setTimeout(async () => {
			await api.removePod()
			await api.startPod()
		}, 300)
		const adopted = await open(api)
		clearTimeout(replace)
		expect(adopted.origin).toBe('adopted-running')
		expect(api.model.pod?.metadata.uid).not.toBe(oldUid)
		expect((await adopted.exec('true')).exitCode).toBe(0)
	})

	it('names the terminating pod when no replacement comes within readyTimeoutMs', async () => {
		const api = await workspaceApi()
		await open(api)
		const old = api.model.pod
		api.model.pod = {
			...old,
			metadata: { ...old?.metadata, deletionTimestamp: new Date().toISOString() },
		} as typeof old
		const error = await open(api, {}, { readyTimeoutMs: 300 }).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(ReadinessPollTimeout)
		expect((error as ReadinessPollTimeout).lastObserved).toContain(
			`uid ${old?.metadata.uid}) is terminating`,
		)
		expect(writes(api).map((call) => call.verb)).toEqual(['POST', 'POST'])
	})

	it.each([
		[
			'built from another template',
			{ 'sandbox.namzu.ai/template': 'other' },
			undefined,
			'template-label',
		],
		[
			'without the RuntimeClass configured',
			{ 'sandbox.namzu.ai/template': 'ws-template' },
			'kata',
			'runtimeClassName',
		],
	])(
		'refuses to adopt an object %s, patching, waking and dialing nothing',
		async (_label, labels, runtimeClassName, field) => {
			const api = await workspaceApi()
			await open(api)
			await handles[0]?.suspend({ flush: false })
			const sandbox = api.model.sandbox
			if (!sandbox) throw new Error('no sandbox')
			const podTemplate = sandbox.spec.podTemplate as { metadata: object }
			api.model.sandbox = {
				...sandbox,
				spec: { ...sandbox.spec, podTemplate: { ...podTemplate, metadata: { labels } } },
			}
			api.calls.splice(0)
			const error = await open(api, runtimeClassName ? { runtimeClassName } : {}).catch(
				(e: unknown) => e,
			)
			expect(error).toBeInstanceOf(KubernetesWorkspaceMismatchError)
			expect(error).toMatchObject({ field })
			expect(writes(api).map((call) => call.verb)).toEqual(['POST'])
		},
	)

	it('refuses a template without a block disk before anything is created', async () => {
		const template = blockTemplate()
		const spec = template.spec as { volumeClaimTemplates: { spec: Record<string, unknown> }[] }
		const first = spec.volumeClaimTemplates[0]
		if (first) first.spec.volumeMode = 'Filesystem'
		const api = await workspaceApi({ template })
		await expect(open(api)).rejects.toBeInstanceOf(KubernetesWorkspaceDiskError)
		expect(api.log()).toEqual([`GET ${TEMPLATE}`])
	})

	it('refuses a workspaceId that is not a DNS-1123 label before any request', async () => {
		const api = await workspaceApi()
		await expect(open(api, { workspaceId: 'Not_A_Label' })).rejects.toBeInstanceOf(
			SandboxArgumentError,
		)
		expect(api.calls).toEqual([])
	})

	it('refuses a hostname allowlist the core engine cannot enforce before any request', async () => {
		const api = await workspaceApi()
		await expect(
			open(api, {}, { egress: { policy: { kind: 'static', allowedHosts: ['example.com'] } } }),
		).rejects.toBeInstanceOf(KubernetesUnenforceableEgressPolicyError)
		expect(api.calls).toEqual([])
	})

	it('R15-a75f670-15: refuses ciliumNarrowing beside public-internet before any request', async () => {
		const api = await workspaceApi()
		const egress = {
			engine: 'cilium' as const,
			policy: { kind: 'public-internet' as const },
			ciliumNarrowing: { hostPorts: {}, ports: [1] },
		}
		await expect(open(api, {}, { egress })).rejects.toBeInstanceOf(
			KubernetesEgressNarrowingUnsupportedError,
		)
		expect(api.calls).toEqual([])
	})

	it("checks the egress policy of the workspace's own template (<template>-egress) on every call, before the POST", async () => {
		const api = await workspaceApi()
		const egress = { policy: { kind: 'deny-all' as const } }
		for (let attempt = 0; attempt < 2; attempt++) {
			await expect(
				open(api, { sandboxTemplateName: 'ws-template' }, { sandboxTemplateName: 'task', egress }),
			).rejects.toBeDefined()
		}
		const reads = api.log().filter((entry) => entry.includes('networkpolicies'))
		expect(reads).toHaveLength(2)
		expect(reads[0]).toContain('/ws-template-egress')
		expect(api.log().some((entry) => entry.startsWith('POST'))).toBe(false)
	})
})

describe('Kubernetes workspace: the gate while suspended', () => {
	it.each<[string, (workspace: KubernetesWorkspace) => Promise<unknown>]>([
		['exec', (w) => w.exec('true')],
		['writeFile', (w) => w.writeFile('a', 'x')],
		['readFile', (w) => w.readFile('a', { offset: 1, length: 2 })],
		['listFiles', (w) => w.listFiles('.')],
		['openTerminal', (w) => w.openTerminal({ size: { cols: 80, rows: 24 } })],
		['openTcpConnection', (w) => w.openTcpConnection({ port: 1 })],
		['flush', (w) => w.flush()],
		['quiesce', (w) => w.quiesce()],
		[
			'readFileStream',
			async (w) => {
				for await (const _ of w.readFileStream('a')) break
			},
		],
		[
			'walkFiles',
			async (w) => {
				for await (const _ of w.walkFiles('.', { maxEntries: 10 })) break
			},
		],
	])(
		'refuses %s with KubernetesWorkspaceSuspendedError naming it, dialing nothing',
		async (operation, call) => {
			const api = await workspaceApi()
			let dials = 0
			const workspace = await open(api, {}, { onDialAttempt: () => void dials++ })
			await workspace.suspend({ flush: false })
			const before = dials
			const error = await call(workspace).catch((e: unknown) => e)
			expect(error).toBeInstanceOf(KubernetesWorkspaceSuspendedError)
			expect(error).toMatchObject({ operation, workspaceName: 'namzu-ws-w1' })
			expect(dials).toBe(before)
		},
	)
})
