/**
 * exec in one round trip against the real agent, in all four pairings of a host and an agent that
 * have `execute-reserves` or not. The "old" side is the real code with the feature switched off by
 * its seam: the agent started with `NAMZU_AGENT_EXECUTE_RESERVES=0`, the host's transport built
 * with `executeReserves: false`. A recording relay shows what crossed the wire: one `execute`
 * carrying its own reservation only when both sides have it, `reserve-execution` first otherwise,
 * and the same result in every pairing. Then the proof an abort gives on the one-trip path: a
 * cancel that overtakes the `execute` fences the id, the call resolves aborted, and the command
 * never runs — even though its `execute` reaches the agent afterwards.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentExecutionAdapter } from '../../../src/host/exec/agent-execution-adapter.js'
import {
	type RemoteExecutionAdapter,
	RemoteExecutionController,
} from '../../../src/host/exec/remote-execution-controller.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { isExecutionId } from '../../../src/wire/execution-id.js'
import { EXECUTE_RESERVES_FEATURE } from '../../../src/wire/features.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	type FrameRecordingRelay,
	type RelayedConnection,
	startFrameRecordingRelay,
} from '../../helpers/frame-recording-relay.js'

const TOKEN = 'execute-reserves-token-0123456789'

interface Side {
	readonly agent: StartedAgent
	readonly relay: FrameRecordingRelay
}

let newAgent: Side
let oldAgent: Side

async function side(env: Record<string, string>): Promise<Side> {
	const agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN, ...env } })
	return { agent, relay: await startFrameRecordingRelay(agent.port ?? 0) }
}

beforeAll(async () => {
	;[newAgent, oldAgent] = await Promise.all([side({}), side({ NAMZU_AGENT_EXECUTE_RESERVES: '0' })])
})

afterAll(async () => {
	for (const s of [newAgent, oldAgent]) {
		await s?.relay.close()
		await s?.agent.stop()
	}
})

async function transportTo(target: Side, executeReserves: boolean): Promise<AgentTransport> {
	const transport = new AgentTransport(
		{ kind: 'tcp', host: '127.0.0.1', port: target.relay.port, token: TOKEN },
		{ executeReserves },
	)
	// As a sandbox does at create: the features are read before the first exec.
	await transport.features()
	return transport
}

function opsSince(target: Side, from: number): string[] {
	return target.relay.connections
		.slice(from)
		.map((connection: RelayedConnection) => String(connection.fromHost[0]?.op))
		.filter((op) => op !== 'healthz')
}

const PAIRINGS = [
	{ name: 'new host, new agent', host: true, agent: 'new', oneTrip: true },
	{ name: 'new host, old agent', host: true, agent: 'old', oneTrip: false },
	{ name: 'old host, new agent', host: false, agent: 'new', oneTrip: false },
	{ name: 'old host, old agent', host: false, agent: 'old', oneTrip: false },
] as const

describe.each(PAIRINGS)('exec round trips, $name', (pairing) => {
	const target = (): Side => (pairing.agent === 'new' ? newAgent : oldAgent)

	it(`advertises execute-reserves only on a new agent; one round trip: ${pairing.oneTrip}`, async () => {
		const transport = await transportTo(target(), pairing.host)
		expect((await transport.features()).has(EXECUTE_RESERVES_FEATURE)).toBe(pairing.agent === 'new')
		expect(transport.executeReservesAgreed).toBe(pairing.oneTrip)
	})

	it('runs the command with the same result, reserving inside execute only when both sides can', async () => {
		const transport = await transportTo(target(), pairing.host)
		const controller = new RemoteExecutionController(agentExecutionAdapter(transport))
		const from = target().relay.connections.length
		const result = await controller.exec('sh', ['-c', 'echo same; echo err >&2; exit 3'])
		expect(result).toMatchObject({ exitCode: 3, stdout: 'same\n', stderr: 'err\n' })
		expect(result.aborted === true).toBe(false)
		expect(opsSince(target(), from)).toEqual(
			pairing.oneTrip ? ['execute'] : ['reserve-execution', 'execute'],
		)
		const execute = target()
			.relay.connections.slice(from)
			.find((connection) => connection.fromHost[0]?.op === 'execute')
		const body = execute?.fromHost[0]?.body as Record<string, unknown> | undefined
		expect(isExecutionId(body?.executionId)).toBe(true)
		expect(body?.reserve).toBe(pairing.oneTrip ? true : undefined)
	})

	it('an abort while the command runs cancels it by id, the same in every pairing', async () => {
		const transport = await transportTo(target(), pairing.host)
		const controller = new RemoteExecutionController(agentExecutionAdapter(transport))
		const abort = new AbortController()
		const result = await controller.exec('sh', ['-c', 'echo up; sleep 30'], {
			signal: abort.signal,
			onOutput: () => abort.abort(),
		})
		expect(result).toMatchObject({ aborted: true, stdout: 'up\n' })
	})
})

describe('exec in one round trip: an abort before the guest saw the execute', () => {
	it('fences the id: the call resolves aborted and the command never runs, though its execute arrives after', async () => {
		const transport = await transportTo(newAgent, true)
		const real = agentExecutionAdapter(transport)
		// The real adapter, with the execute held back until the caller's cancel was acknowledged:
		// the order a slow or lost execute connection produces.
		let cancelled: () => void = () => {}
		const cancelAcknowledged = new Promise<void>((resolve) => {
			cancelled = resolve
		})
		let lateExecute: Promise<unknown> | undefined
		const adapter: RemoteExecutionAdapter = {
			...real,
			reservesOnExecute: real.reservesOnExecute,
			async cancel(executionId, signal, onDialed, fence) {
				const reply = await real.cancel(executionId, signal, onDialed, fence)
				cancelled()
				return reply
			},
			execute(request, signal, onOutput, onDialed) {
				lateExecute = cancelAcknowledged.then(() =>
					real.execute(request, new AbortController().signal, onOutput, onDialed),
				)
				lateExecute.catch(() => undefined)
				return new Promise((_resolve, reject) => {
					signal.addEventListener('abort', () => reject(signal.reason), { once: true })
				})
			},
		}
		const controller = new RemoteExecutionController(adapter)
		const abort = new AbortController()
		const pending = controller.exec('touch', ['never-ran'], { signal: abort.signal })
		await new Promise((resolve) => setTimeout(resolve, 50))
		abort.abort()
		const result = await pending
		expect(result).toMatchObject({ aborted: true, exitCode: 1, stdout: '', stderr: '' })
		// The execute did reach the agent, after the fence: refused, so nothing ran.
		await expect(lateExecute).rejects.toThrow(/execution_cancelled/)
		expect(existsSync(join(newAgent.agent.workspace, 'never-ran'))).toBe(false)
	})

	it('positive control: the same adapter with nothing aborted runs the command', async () => {
		const transport = await transportTo(newAgent, true)
		const controller = new RemoteExecutionController(agentExecutionAdapter(transport))
		const result = await controller.exec('touch', ['did-run'])
		expect(result.exitCode).toBe(0)
		expect(result.aborted === true).toBe(false)
		expect(existsSync(join(newAgent.agent.workspace, 'did-run'))).toBe(true)
	})
})
