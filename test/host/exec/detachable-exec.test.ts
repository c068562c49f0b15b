/** Detachable executions through createAgentSandbox over the real agent (and a relay we can cut). */
import { randomUUID } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExecutionDetachedError } from '../../../src/host/exec/exec-errors.js'
import { ExecutionAttachUnsupportedError } from '../../../src/host/refusals/guest-feature-errors.js'
import {
	ExecutionCancelRefusedError,
	ExecutionNotAttachableError,
	RemoteCancellationUnknownError,
} from '../../../src/host/refusals/refusal-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { healthzReply, reply, startFakeAgent, streamReply } from '../fake-agent-server.js'
import { type DroppingProxy, startDroppingProxy } from './dropping-proxy.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function sandboxOver(path: string, rootDir: string, id = 'detachable'): AgentSandbox {
	return createAgentSandbox({
		id,
		transport: new AgentTransport({ kind: 'unix', path }),
		rootDir,
		environment: 'linux-namespace',
		release: async () => {},
	})
}

function newId(): string {
	return `exec_${randomUUID()}`
}

/** Prints `one`, waits for the file `<tag>-go`, prints `two` and exits 7. */
function gated(tag: string): string[] {
	return ['-c', `echo one; while [ ! -f ${tag}-go ]; do sleep 0.02; done; echo two; exit 7`]
}

function firstOutput(): { seen: Promise<void>; onOutput: () => void } {
	let onOutput: () => void = () => {}
	const seen = new Promise<void>((resolve) => {
		onOutput = resolve
	})
	return { seen, onOutput }
}

describe('detachable exec against the real agent', () => {
	let agent: StartedAgent
	let proxy: DroppingProxy
	let relayed: AgentSandbox
	let direct: AgentSandbox
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_CANCEL_GRACE_MS: '50' } })
		proxy = await startDroppingProxy(agent.socketPath ?? '')
		relayed = sandboxOver(proxy.path, agent.workspace, 'relayed')
		direct = sandboxOver(agent.socketPath ?? '', agent.workspace, 'direct')
	})
	afterAll(async () => {
		await relayed?.destroy()
		await direct?.destroy()
		await proxy?.close()
		await agent?.stop()
	})
	const go = (tag: string) => writeFileSync(join(agent.workspace, `${tag}-go`), '')

	it('survives a dropped connection by reattaching from its offset, completes with the full output and never sends a cancel', async () => {
		const output = firstOutput()
		let executionId = ''
		const pending = relayed.exec('sh', gated('drop'), {
			detach: true,
			onExecutionId: (id) => {
				executionId = id
			},
			onOutput: output.onOutput,
		})
		await output.seen
		const opsBefore = proxy.ops.length
		proxy.dropAll()
		go('drop')
		const result = await pending
		expect(result).toMatchObject({ exitCode: 7, stdout: 'one\ntwo\n', stderr: '', timedOut: false })
		expect(result.aborted).toBeUndefined()
		expect(executionId).toMatch(/^exec_/)
		expect(proxy.ops.slice(opsBefore)).toContain('attach-execution')
		expect(proxy.ops).not.toContain('cancel-execution')
		expect(relayed.transport.guestBootId).toMatch(UUID)
	})

	it('disarms the reattach window once a reattach succeeds, so a long run after it still completes', async () => {
		const output = firstOutput()
		const pending = relayed.exec('sh', gated('disarm'), {
			detach: true,
			reattachWindowMs: 200,
			onOutput: output.onOutput,
		})
		await output.seen
		proxy.dropAll()
		await new Promise((resolve) => setTimeout(resolve, 600))
		go('disarm')
		expect(await pending).toMatchObject({ exitCode: 7, stdout: 'one\ntwo\n' })
	})

	it('rejects with ExecutionDetachedError (id and offset) once the reattach window passes, leaving the command running', async () => {
		const output = firstOutput()
		const executionId = newId()
		const pending = relayed.exec('sh', gated('window'), {
			executionId,
			reattachWindowMs: 300,
			onOutput: output.onOutput,
		})
		await output.seen
		proxy.down = true
		proxy.dropAll()
		const error = await pending.then(
			() => undefined,
			(failure: unknown) => failure,
		)
		proxy.down = false
		expect(error).toBeInstanceOf(ExecutionDetachedError)
		expect(error).toMatchObject({
			executionId,
			outputOffset: 4,
			detachReason: 'reattach-window-elapsed',
		})
		expect(proxy.ops).not.toContain('cancel-execution')
		go('window')
		const rest = await direct.attachExecution(executionId, { fromOffset: 4 })
		expect(rest).toMatchObject({ exitCode: 7, stdout: 'two\n' })
	})

	it('leaves the command running on detachSignal; a second sandbox attaches by id and every attach gets the same result as the exec', async () => {
		const output = firstOutput()
		const executionId = newId()
		const detach = new AbortController()
		const pending = relayed.exec('sh', gated('handoff'), {
			executionId,
			detachSignal: detach.signal,
			onOutput: output.onOutput,
		})
		await output.seen
		detach.abort()
		await expect(pending).rejects.toMatchObject({
			name: 'ExecutionDetachedError',
			executionId,
			detachReason: 'detached',
		})
		const other = sandboxOver(agent.socketPath ?? '', agent.workspace, 'other-process')
		try {
			const attached = other.attachExecution(executionId)
			go('handoff')
			const first = await attached
			expect(first).toMatchObject({ exitCode: 7, stdout: 'one\ntwo\n' })
			expect(await other.attachExecution(executionId)).toEqual(first)
			// The same id again is not a second run: exec follows the held record to the same result.
			expect(await direct.exec('sh', ['-c', 'echo never'], { executionId })).toEqual(first)
		} finally {
			await other.destroy()
		}
	})

	it('cancelExecution from a second handle is confirmed, and the exec watching it resolves aborted', async () => {
		const output = firstOutput()
		const executionId = newId()
		const pending = relayed.exec('sh', gated('cancel'), { executionId, onOutput: output.onOutput })
		await output.seen
		const ack = await direct.cancelExecution(executionId)
		expect(ack).toMatchObject({ ok: true, state: 'cancelled', started: true })
		const result = await pending
		expect(result.aborted).toBe(true)
		expect(result.exitCode).not.toBe(0)
		expect(result.stdout).toBe('one\n')
		await expect(direct.cancelExecution(newId())).rejects.toBeInstanceOf(
			ExecutionCancelRefusedError,
		)
		expect(relayed.status).toBe('ready')
	})

	it('aborting signal cancels a detachable command for real and resolves aborted', async () => {
		const output = firstOutput()
		const controller = new AbortController()
		const pending = relayed.exec('sh', ['-c', 'echo one; sleep 0.5; touch abort-ran-on'], {
			detach: true,
			signal: controller.signal,
			onOutput: output.onOutput,
		})
		await output.seen
		controller.abort()
		const result = await pending
		expect(result.aborted).toBe(true)
		await new Promise((resolve) => setTimeout(resolve, 700))
		expect(existsSync(join(agent.workspace, 'abort-ran-on'))).toBe(false)
	})

	it('refuses attach with ExecutionNotAttachableError: executionState reserved for a never-started id, unknown_execution otherwise', async () => {
		const executionId = newId()
		await direct.transport.reserveExecution(AbortSignal.timeout(2000), executionId)
		const error = await direct.attachExecution(executionId).catch((failure: unknown) => failure)
		expect(error).toBeInstanceOf(ExecutionNotAttachableError)
		expect(error).toMatchObject({ refusal: 'output_not_retained', executionState: 'reserved' })
		await expect(direct.attachExecution(newId())).rejects.toMatchObject({
			name: 'ExecutionNotAttachableError',
			refusal: 'unknown_execution',
		})
	})
})

describe('detachable exec when the guest evicted output', () => {
	let agent: StartedAgent
	let sandbox: AgentSandbox
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_EXECUTION_LOG_BYTES: '64' } })
		sandbox = sandboxOver(agent.socketPath ?? '', agent.workspace)
	})
	afterAll(async () => {
		await sandbox?.destroy()
		await agent?.stop()
	})

	it('reports the lost bytes through onGap and sets both truncated flags', async () => {
		const executionId = newId()
		const line = `${'y'.repeat(49)}\n`
		const original = await sandbox.exec('sh', ['-c', `printf '${line.repeat(4)}'`], {
			executionId,
		})
		expect(original.stdout).toBe(line.repeat(4))
		const gaps: number[] = []
		const later = await sandbox.attachExecution(executionId, { onGap: (lost) => gaps.push(lost) })
		expect(gaps).toEqual([136])
		expect(later.stdout).toBe(line.repeat(4).slice(136))
		expect(later).toMatchObject({ stdoutTruncated: true, stderrTruncated: true, exitCode: 0 })
	})
})

describe('cancelExecution against a guest that cannot confirm', () => {
	it('rejects RemoteCancellationUnknownError and retires nothing', async () => {
		const fake = await startFakeAgent((request, socket) => {
			if (request.op === 'cancel-execution') {
				reply(socket, { ok: false, error: 'cancellation_unconfirmed', message: 'still there' })
			} else reply(socket, { ok: false, error: 'unexpected' })
		})
		let retired = 0
		const sandbox = createAgentSandbox({
			id: 'unconfirmed',
			transport: new AgentTransport({ kind: 'unix', path: fake.path ?? '' }),
			rootDir: '/workspace',
			environment: 'linux-namespace',
			release: async () => {},
			retire: async () => {
				retired++
				return { accepted: true }
			},
		})
		try {
			await expect(sandbox.cancelExecution(newId())).rejects.toBeInstanceOf(
				RemoteCancellationUnknownError,
			)
			expect(retired).toBe(0)
			expect(sandbox.retirement).toBeUndefined()
			expect(sandbox.status).toBe('ready')
		} finally {
			await sandbox.destroy()
			await fake.close()
		}
	})
})

describe('detachable exec against a guest without execution-attach', () => {
	it('is refused with ExecutionAttachUnsupportedError before anything is reserved, while a plain exec sends the release-14 bytes', async () => {
		const fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') reply(socket, healthzReply(['write-file-parts']))
			else if (request.op === 'reserve-execution') {
				reply(socket, {
					ok: true,
					protocolVersion: 2,
					executionId: 'exec_00000000-0000-4000-8000-000000000000',
					leaseExpiresAt: Date.now() + 30_000,
				})
			} else if (request.op === 'execute') {
				streamReply(socket, [
					{ type: 'stdout_delta', data: 'hi\n' },
					{
						type: 'result',
						exitCode: 0,
						timedOut: false,
						durationMs: 1,
						stdoutTruncated: false,
						stderrTruncated: false,
					},
				])
			} else reply(socket, { ok: false, error: 'unexpected' })
		})
		const sandbox = sandboxOver(fake.path ?? '', '/workspace', 'old-guest')
		try {
			await expect(sandbox.exec('echo', ['hi'], { detach: true })).rejects.toBeInstanceOf(
				ExecutionAttachUnsupportedError,
			)
			await expect(sandbox.exec('echo', ['hi'], { executionId: newId() })).rejects.toBeInstanceOf(
				ExecutionAttachUnsupportedError,
			)
			await expect(sandbox.attachExecution(newId())).rejects.toBeInstanceOf(
				ExecutionAttachUnsupportedError,
			)
			expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])

			const plain = await sandbox.exec('echo', ['hi'], { timeout: 1000 })
			expect(plain).toMatchObject({ exitCode: 0, stdout: 'hi\n' })
			const [reserve, execute] = fake.requests.slice(1)
			expect(reserve?.raw).toEqual(encodeFrame({ op: 'reserve-execution', body: {} }))
			expect(execute?.raw).toEqual(
				encodeFrame({
					op: 'execute',
					body: {
						executionId: 'exec_00000000-0000-4000-8000-000000000000',
						command: 'echo',
						args: ['hi'],
						timeoutMs: 1000,
					},
				}),
			)
		} finally {
			await sandbox.destroy()
			await fake.close()
		}
	})
})
