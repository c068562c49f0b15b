/**
 * The controller's decisions against scripted adapters (a recording fake pins the request
 * sequence; the real agent is exercised in agent-sandbox-exec.test.ts).
 */
import { describe, expect, it } from 'vitest'
import type { SandboxOutputChunk } from '../../../src/contract/sandbox.js'
import { RemoteResultIncompleteError } from '../../../src/host/exec/exec-errors.js'
import {
	DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS,
	type RemoteExecuteRequest,
	type RemoteExecutionAdapter,
	RemoteExecutionController,
} from '../../../src/host/exec/remote-execution-controller.js'
import type { RemoteTerminalMetadata } from '../../../src/host/exec/remote-execution-messages.js'
import {
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteExecutionRefusedError,
	RemoteProtocolError,
} from '../../../src/host/refusals/refusal-errors.js'

const ID = 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10'
const RESERVATION = {
	ok: true,
	protocolVersion: 2,
	executionId: ID,
	leaseExpiresAt: Date.now() + 30_000,
}

interface Script {
	reserve?: (signal: AbortSignal) => Promise<unknown>
	cancel?: (signal: AbortSignal) => Promise<unknown>
	execute?: (
		request: RemoteExecuteRequest,
		signal: AbortSignal,
		onOutput: (chunk: SandboxOutputChunk) => void,
	) => Promise<RemoteTerminalMetadata>
}

function scripted(script: Script): { adapter: RemoteExecutionAdapter; calls: string[] } {
	const calls: string[] = []
	return {
		calls,
		adapter: {
			label: 'scripted',
			reserve: (signal) => {
				calls.push('reserve')
				return script.reserve ? script.reserve(signal) : Promise.resolve(RESERVATION)
			},
			cancel: (_id, signal) => {
				calls.push('cancel')
				return script.cancel
					? script.cancel(signal)
					: Promise.resolve({ ok: true, state: 'cancelled', started: false })
			},
			execute: (request, signal, onOutput) => {
				calls.push('execute')
				return script.execute
					? script.execute(request, signal, onOutput)
					: Promise.resolve({ exitCode: 0, timedOut: false, durationMs: 1 })
			},
		},
	}
}

/** Never settles until the signal aborts, then rejects with its reason. */
function untilAborted<T>(signal: AbortSignal): Promise<T> {
	return new Promise((_resolve, reject) => {
		signal.addEventListener('abort', () => reject(signal.reason), { once: true })
	})
}

const fast = {
	cancelConfirmTimeoutMs: 300,
	resultDrainTimeoutMs: 100,
	controlRequestTimeoutMs: 100,
}

describe('RemoteExecutionController', () => {
	it('defaults the cancel-confirm window to 8 seconds', () => {
		expect(DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS).toBe(8000)
		expect(new RemoteExecutionController(scripted({}).adapter).cancelConfirmTimeoutMs).toBe(8000)
	})

	it('reserves before executing even when the caller passes no signal', async () => {
		const { adapter, calls } = scripted({})
		const result = await new RemoteExecutionController(adapter).exec('true')
		expect(calls).toEqual(['reserve', 'execute'])
		expect(result).toMatchObject({ exitCode: 0, timedOut: false })
		expect(result.aborted).toBeUndefined()
	})

	it('passes the reserved id, argv, cwd, env and the effective timeout to execute', async () => {
		let seen: RemoteExecuteRequest | undefined
		const { adapter } = scripted({
			execute: async (request) => {
				seen = request
				return { exitCode: 0, timedOut: false, durationMs: 1 }
			},
		})
		await new RemoteExecutionController(adapter, { defaultTimeoutMs: 1234 }).exec('ls', ['-l'], {
			cwd: '/w',
			env: { A: '1' },
		})
		expect(seen).toEqual({
			executionId: ID,
			command: 'ls',
			args: ['-l'],
			cwd: '/w',
			env: { A: '1' },
			timeoutMs: 1234,
		})
	})

	it('resolves an already-aborted call with the never-started result and sends nothing', async () => {
		const { adapter, calls } = scripted({})
		const result = await new RemoteExecutionController(adapter).exec('true', [], {
			signal: AbortSignal.abort(),
		})
		expect(calls).toEqual([])
		expect(result).toMatchObject({ exitCode: 1, aborted: true, timedOut: false, stdout: '' })
	})

	it('resolves an abort during the reservation with the never-started result', async () => {
		const controller = new AbortController()
		const { adapter, calls } = scripted({ reserve: (signal) => untilAborted(signal) })
		setTimeout(() => controller.abort(), 20)
		const result = await new RemoteExecutionController(adapter).exec('true', [], {
			signal: controller.signal,
		})
		expect(calls).toEqual(['reserve'])
		expect(result).toMatchObject({ exitCode: 1, aborted: true, timedOut: false })
	})

	it.each([
		['a malformed execution id', { ...RESERVATION, executionId: 'exec_nope' }, RemoteProtocolError],
		['another protocol version', { ...RESERVATION, protocolVersion: 3 }, RemoteProtocolError],
		['a non-finite lease', { ...RESERVATION, leaseExpiresAt: null }, RemoteProtocolError],
		['an unknown op', { ok: false, error: 'unknown_op: reserve-execution' }, RemoteProtocolError],
		['a retiring agent', { ok: false, error: 'agent_retiring' }, RemoteCancellationUnknownError],
		['no capacity', { ok: false, error: 'execution_capacity' }, RemoteExecutionRefusedError],
	])('refuses a reservation with %s', async (_name, reservation, kind) => {
		const { adapter, calls } = scripted({ reserve: async () => reservation })
		await expect(new RemoteExecutionController(adapter).exec('true')).rejects.toBeInstanceOf(kind)
		expect(calls).toEqual(['reserve'])
	})

	it('forwards output deltas to onOutput as they arrive and keeps them in the result', async () => {
		const chunks: string[] = []
		const { adapter } = scripted({
			execute: async (_request, _signal, onOutput) => {
				onOutput({ stream: 'stdout', data: 'a' })
				onOutput({ stream: 'stderr', data: 'b' })
				onOutput({ stream: 'stdout', data: 'c' })
				return { exitCode: 2, timedOut: false, durationMs: 3 }
			},
		})
		const result = await new RemoteExecutionController(adapter).exec('x', [], {
			onOutput: (chunk) => chunks.push(`${chunk.stream}:${chunk.data}`),
		})
		expect(chunks).toEqual(['stdout:a', 'stderr:b', 'stdout:c'])
		expect(result).toMatchObject({ exitCode: 2, stdout: 'ac', stderr: 'b' })
	})

	it('resolves a caller abort with the aborted shape and the output captured so far', async () => {
		const controller = new AbortController()
		let finish: (metadata: RemoteTerminalMetadata) => void = () => {}
		const { adapter, calls } = scripted({
			execute: (_request, _signal, onOutput) => {
				onOutput({ stream: 'stdout', data: 'partial' })
				setTimeout(() => controller.abort(), 10)
				return new Promise((resolve) => {
					finish = resolve
				})
			},
			cancel: async () => {
				setTimeout(
					() => finish({ exitCode: -1, signal: 'SIGKILL', timedOut: false, durationMs: 5 }),
					5,
				)
				return { ok: true, state: 'cancelled', started: true }
			},
		})
		const result = await new RemoteExecutionController(adapter, fast).exec('x', [], {
			signal: controller.signal,
		})
		expect(calls).toEqual(['reserve', 'execute', 'cancel'])
		expect(result).toMatchObject({
			exitCode: -1,
			signal: 'SIGKILL',
			aborted: true,
			timedOut: false,
			stdout: 'partial',
		})
	})

	it('never reports an aborted run as exit 0, even when the guest says it exited cleanly', async () => {
		const controller = new AbortController()
		const { adapter } = scripted({
			execute: (_request, _signal) => {
				setTimeout(() => controller.abort(), 5)
				return new Promise((resolve) =>
					setTimeout(() => resolve({ exitCode: 0, timedOut: false, durationMs: 5 }), 30),
				)
			},
			cancel: () => new Promise(() => {}),
		})
		const result = await new RemoteExecutionController(adapter, fast).exec('x', [], {
			signal: controller.signal,
		})
		expect(result.aborted).toBe(true)
		expect(result.exitCode).not.toBe(0)
	})

	it('keeps the aborted shape when the confirmed cancellation result never drains', async () => {
		const controller = new AbortController()
		const { adapter } = scripted({
			execute: (_request, signal) => {
				setTimeout(() => controller.abort(), 5)
				return untilAborted(signal)
			},
			cancel: async () => ({
				ok: true,
				state: 'cancelled',
				started: true,
				result: { exitCode: -1, signal: 'SIGTERM', timedOut: false, durationMs: 9 },
			}),
		})
		const result = await new RemoteExecutionController(adapter, fast).exec('x', [], {
			signal: controller.signal,
		})
		expect(result).toMatchObject({
			exitCode: -1,
			signal: 'SIGTERM',
			aborted: true,
			timedOut: false,
		})
	})

	it('throws RemoteCancellationUnknownError after repeated cancel attempts fail for the whole window', async () => {
		const controller = new AbortController()
		const { adapter, calls } = scripted({
			execute: (_request, signal) => {
				setTimeout(() => controller.abort(), 5)
				return untilAborted(signal)
			},
			cancel: async () => ({ ok: false, error: 'cancellation_unconfirmed' }),
		})
		const error = await new RemoteExecutionController(adapter, fast)
			.exec('x', [], { signal: controller.signal })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
		expect((error as RemoteCancellationUnknownError).executionId).toBe(ID)
		expect((error as Error).message).toMatch(/do not retry automatically/)
		expect(calls.filter((call) => call === 'cancel').length).toBeGreaterThan(1)
	})

	it('cancels at the observation deadline and reports the run as timed out, not aborted', async () => {
		let cancelled = false
		const { adapter } = scripted({
			execute: (_request, signal) => untilAborted(signal),
			cancel: async () => {
				cancelled = true
				return {
					ok: true,
					state: 'cancelled',
					started: true,
					result: { exitCode: -1, signal: 'SIGKILL', timedOut: false, durationMs: 60 },
				}
			},
		})
		const result = await new RemoteExecutionController(adapter, {
			...fast,
			executionObservationGraceMs: 10,
		}).exec('x', [], { timeout: 50 })
		expect(cancelled).toBe(true)
		expect(result).toMatchObject({ timedOut: true, exitCode: -1 })
		expect(result.aborted).toBeUndefined()
	})

	it('rethrows a guest command error when the reconciling cancellation reports failed', async () => {
		const refusal = new RemoteCommandError('invalid_cwd: /nope')
		const { adapter, calls } = scripted({
			execute: async () => {
				throw refusal
			},
			cancel: async () => ({ ok: true, state: 'failed', started: false, error: 'invalid_cwd' }),
		})
		await expect(new RemoteExecutionController(adapter, fast).exec('x')).rejects.toBe(refusal)
		expect(calls).toEqual(['reserve', 'execute', 'cancel'])
	})

	it('reports a started run whose stream broke as RemoteResultIncompleteError', async () => {
		const { adapter } = scripted({
			execute: async () => {
				throw new Error('connection reset')
			},
			cancel: async () => ({ ok: true, state: 'completed', started: true }),
		})
		const error = await new RemoteExecutionController(adapter, fast)
			.exec('x')
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteResultIncompleteError)
		expect((error as RemoteResultIncompleteError).acknowledgement).toMatchObject({ started: true })
	})

	it('rethrows the original failure when the reconciling cancellation proves the run never started', async () => {
		const failure = new Error('dial failed')
		const { adapter } = scripted({
			execute: async () => {
				throw failure
			},
		})
		await expect(new RemoteExecutionController(adapter, fast).exec('x')).rejects.toBe(failure)
	})
})
