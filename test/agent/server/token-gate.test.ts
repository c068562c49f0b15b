import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TokenGate } from '../../../src/agent/server/token-gate.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { openConnection, rawRequest, writesAreRejected } from '../agent-test-kit.js'

const TOKEN = 'per-instance-token-7f3a'

describe('TokenGate', () => {
	it.each([
		{
			name: 'no token variable opens the gate',
			bind: undefined,
			tofu: false,
			token: undefined,
			ok: true,
		},
		{ name: 'the bound token passes', bind: 'abc', tofu: false, token: 'abc', ok: true },
		{ name: 'a missing token fails', bind: 'abc', tofu: false, token: undefined, ok: false },
		{ name: 'an empty token fails', bind: 'abc', tofu: false, token: '', ok: false },
		{ name: 'a different token fails', bind: 'abc', tofu: false, token: 'abd', ok: false },
		{ name: 'a longer token fails', bind: 'abc', tofu: false, token: 'abcd', ok: false },
		{ name: 'a non-string token fails', bind: 'abc', tofu: false, token: 42, ok: false },
		{
			name: 'trust on first use accepts a first token',
			bind: undefined,
			tofu: true,
			token: 'x',
			ok: true,
		},
		{
			name: 'trust on first use never binds an empty token',
			bind: undefined,
			tofu: true,
			token: '',
			ok: false,
		},
	])('$name', ({ bind, tofu, token, ok }) => {
		const gate = new TokenGate({
			...(bind === undefined ? {} : { bindToken: bind }),
			requireToken: tofu,
		})
		expect(gate.authenticate(token)).toBe(ok)
	})

	it('binds the first token in trust-on-first-use mode and refuses every other afterwards', () => {
		const gate = new TokenGate({ requireToken: true })
		expect(gate.bound).toBe(false)
		expect(gate.authenticate('first')).toBe(true)
		expect(gate.bound).toBe(true)
		expect(gate.authenticate('second')).toBe(false)
		expect(gate.authenticate('first')).toBe(true)
	})
})

describe('token gate on a TCP agent with NAMZU_AGENT_BIND_TOKEN', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it.each([
		['a missing', {}],
		['an empty', { token: '' }],
		['a wrong', { token: 'per-instance-token-7f3b' }],
		['a non-string', { token: 1234 }],
	])('answers %s token with unauthorized and destroys the connection', async (_kind, extra) => {
		const connection = openConnection(
			agent,
			{ op: 'reserve-execution', ...extra },
			{ allowHalfOpen: true },
		)
		const refusal = await connection.waitFor(() => true)
		expect(refusal).toEqual({ ok: false, error: 'unauthorized' })
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('gates an unknown op too, so op names cannot be probed without the token', async () => {
		const exchange = await rawRequest(agent, { op: 'no-such-op' })
		expect(exchange.frames).toEqual([{ ok: false, error: 'unauthorized' }])
	})

	it('never runs the handler of an unauthorized request', async () => {
		const exchange = await rawRequest(agent, {
			op: 'execute',
			token: 'wrong',
			body: { command: 'touch', args: ['unauthorized-ran'] },
		})
		expect(exchange.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		expect(exchange.terminated).toBe(false)
		await new Promise((resolve) => setTimeout(resolve, 200))
		expect(existsSync(join(agent.workspace, 'unauthorized-ran'))).toBe(false)
	})

	it('serves a request carrying exactly the bound token', async () => {
		const exchange = await rawRequest(agent, { op: 'reserve-execution', token: TOKEN })
		expect(exchange.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
		expect(String(exchange.frames[0]?.executionId)).toMatch(/^exec_[0-9a-f-]{36}$/)
	})

	it('answers healthz without a token, with liveness, version and features only', async () => {
		const exchange = await rawRequest(agent, { op: 'healthz' })
		expect(exchange.frames).toHaveLength(1)
		expect(Object.keys(exchange.frames[0] ?? {}).sort()).toEqual([
			'features',
			'ok',
			'protocolVersion',
		])
		expect(exchange.frames[0]).toMatchObject({ ok: true, protocolVersion: 2 })
	})

	it('never echoes a token in a healthz reply, right or wrong', async () => {
		for (const token of [TOKEN, 'guess-me']) {
			const exchange = await rawRequest(agent, { op: 'healthz', token })
			expect(JSON.stringify(exchange.frames)).not.toContain(token)
			expect(exchange.frames[0]).toMatchObject({ ok: true })
		}
	})
})

describe('token gate with NAMZU_AGENT_REQUIRE_TOKEN (trust on first use)', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_REQUIRE_TOKEN: '1' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('binds the first token shown and refuses a different one for the life of the process', async () => {
		// healthz neither needs nor binds a token.
		await rawRequest(agent, { op: 'healthz', token: 'not-binding' })
		const missing = await rawRequest(agent, { op: 'reserve-execution' })
		expect(missing.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		const first = await rawRequest(agent, { op: 'reserve-execution', token: 'first-seen' })
		expect(first.frames[0]).toMatchObject({ ok: true })
		const other = await rawRequest(agent, { op: 'reserve-execution', token: 'not-binding' })
		expect(other.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		const again = await rawRequest(agent, { op: 'reserve-execution', token: 'first-seen' })
		expect(again.frames[0]).toMatchObject({ ok: true })
	})
})

describe('no token mode (unix socket, neither token variable)', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('authenticates nothing: ops run without a token', async () => {
		const exchange = await rawRequest(agent, { op: 'reserve-execution' })
		expect(exchange.frames[0]).toMatchObject({ ok: true })
	})

	it('ignores a token presented to an agent that has no token mode', async () => {
		const exchange = await rawRequest(agent, { op: 'reserve-execution', token: 'anything' })
		expect(exchange.frames[0]).toMatchObject({ ok: true })
	})
})
