import { afterEach, describe, expect, it } from 'vitest'
import { PreauthPool } from '../../../src/agent/server/preauth-pool.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	delay,
	lastFrame,
	openConnection,
	rawRequest,
	writesAreRejected,
} from '../agent-test-kit.js'

const TOKEN = 'preauth-token-9c1d'
const agents: StartedAgent[] = []
afterEach(async () => {
	for (const agent of agents.splice(0)) await agent.stop()
})

async function tokenAgent(env: Record<string, string>): Promise<StartedAgent> {
	const agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN, ...env } })
	agents.push(agent)
	return agent
}

const roomy = { maxConnections: 2, maxBufferBytes: 100, idleTimeoutMs: 60_000, deadlineMs: 60_000 }

describe('PreauthPool', () => {
	it('evicts the oldest member when full and admits the newcomer', () => {
		const pool = new PreauthPool(roomy)
		const refusals: string[] = []
		const first = pool.admit((refusal) => refusals.push(`first: ${refusal}`))
		pool.admit((refusal) => refusals.push(`second: ${refusal}`))
		pool.admit((refusal) => refusals.push(`third: ${refusal}`))
		expect(refusals).toEqual([
			'first: too_many_unauthenticated_connections: limit 2 (NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS)',
		])
		expect(pool.size).toBe(2)
		first.release() // releasing an evicted member twice is harmless
		expect(pool.size).toBe(2)
	})

	it('shares one byte budget between members and gives bytes back on release', () => {
		const pool = new PreauthPool(roomy)
		const a = pool.admit(() => {})
		const b = pool.admit(() => {})
		expect(a.receive(60)).toBeUndefined()
		expect(b.receive(41)).toMatch(
			/^preauth_buffer_exhausted: .* limit 100 \(NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES\)$/,
		)
		expect(b.receive(40)).toBeUndefined()
		expect(pool.bufferedBytes).toBe(100)
		a.settle(10) // the reader handed out a frame and keeps 10 bytes
		expect(pool.bufferedBytes).toBe(50)
		a.release()
		b.release()
		expect(pool.bufferedBytes).toBe(0)
		expect(pool.size).toBe(0)
	})
})

describe('pre-auth bounds on a token-mode agent', () => {
	it('evicts the oldest unauthenticated connection when the pool is full and serves the arrival', async () => {
		const agent = await tokenAgent({ NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS: '2' })
		const oldest = openConnection(agent, Buffer.from('0'), { allowHalfOpen: true })
		await delay(100)
		const middle = openConnection(agent, Buffer.from('0'))
		await delay(100)
		const arrival = await rawRequest(agent, { op: 'reserve-execution', token: TOKEN })
		expect(arrival.frames[0]).toMatchObject({ ok: true })
		const evicted = await oldest.waitFor(() => true)
		expect(evicted).toEqual({
			ok: false,
			error: 'too_many_unauthenticated_connections: limit 2 (NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS)',
		})
		expect(await writesAreRejected(oldest)).toBe(true)
		middle.socket.destroy()
	})

	it('never lets a full pool of squatters starve the healthz probe', async () => {
		const agent = await tokenAgent({ NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS: '3' })
		const squatters = []
		for (let i = 0; i < 6; i++) {
			squatters.push(openConnection(agent, Buffer.from('00')))
			await delay(20)
		}
		for (let i = 0; i < 3; i++) {
			const probe = await rawRequest(agent, { op: 'healthz' })
			expect(lastFrame(probe)).toMatchObject({ ok: true, protocolVersion: 2 })
		}
		for (const squatter of squatters) squatter.socket.destroy()
	})

	it('refuses whichever connection would exceed the shared pre-auth buffer budget', async () => {
		const agent = await tokenAgent({
			NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES: '1024',
			NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES: '1500',
		})
		// An incomplete 1000-byte frame: the agent must hold its bytes while waiting for the rest.
		const holder = openConnection(
			agent,
			Buffer.concat([Buffer.from('000003e8\n'), Buffer.alloc(900, 0x20)]),
		)
		await delay(150)
		const late = openConnection(
			agent,
			Buffer.concat([Buffer.from('000003e8\n'), Buffer.alloc(700, 0x20)]),
			{
				allowHalfOpen: true,
			},
		)
		const refusal = await late.waitFor(() => true)
		expect(String(refusal.error)).toMatch(
			/^preauth_buffer_exhausted: .*limit 1500 \(NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES\)$/,
		)
		expect(await writesAreRejected(late)).toBe(true)
		holder.socket.destroy()
	})

	it('retires a silent unauthenticated connection after NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS', async () => {
		const agent = await tokenAgent({ NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS: '150' })
		const quiet = openConnection(agent, Buffer.from('0000'))
		const refusal = await quiet.waitFor(() => true)
		expect(String(refusal.error)).toContain('(NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS)')
		await quiet.closed
	})

	it('retires a byte-trickling peer by NAMZU_AGENT_PREAUTH_DEADLINE_MS, not the idle timer', async () => {
		const agent = await tokenAgent({
			NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS: '400',
			NAMZU_AGENT_PREAUTH_DEADLINE_MS: '700',
		})
		const trickler = openConnection(agent, Buffer.from('00000100\n'))
		let sent = 0
		const drip = setInterval(() => {
			if (!trickler.socket.destroyed) trickler.socket.write(' ')
			sent++
		}, 100)
		try {
			const refusal = await trickler.waitFor(() => true)
			expect(String(refusal.error)).toContain('(NAMZU_AGENT_PREAUTH_DEADLINE_MS)')
			expect(sent).toBeGreaterThan(0)
		} finally {
			clearInterval(drip)
		}
	})

	it('clears the deadline once authenticated, so a longer execute is never cut by it', async () => {
		const agent = await tokenAgent({
			NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS: '200',
			NAMZU_AGENT_PREAUTH_DEADLINE_MS: '200',
		})
		const exchange = await rawRequest(agent, {
			op: 'execute',
			token: TOKEN,
			body: { command: 'sh', args: ['-c', 'sleep 0.6; echo survived'] },
		})
		expect(lastFrame(exchange)).toMatchObject({ type: 'result', exitCode: 0 })
	})
})

describe('pre-auth bounds outside token modes', () => {
	it('applies none of them on a unix agent without a token', async () => {
		const agent = await startAgent({
			env: {
				NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS: '1',
				NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS: '100',
				NAMZU_AGENT_PREAUTH_DEADLINE_MS: '100',
			},
		})
		agents.push(agent)
		const first = openConnection(agent, Buffer.from('0'))
		const second = openConnection(agent, Buffer.from('0'))
		await delay(300)
		expect(first.frames).toEqual([])
		expect(second.frames).toEqual([])
		expect(first.socket.destroyed).toBe(false)
		expect(second.socket.destroyed).toBe(false)
		first.socket.destroy()
		second.socket.destroy()
	})
})
