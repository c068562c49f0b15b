import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	delay,
	lastFrame,
	openConnection,
	rawRequest,
	streamText,
	writesAreRejected,
} from '../agent-test-kit.js'

function framed(json: string): Buffer {
	const payload = Buffer.from(json, 'utf8')
	return Buffer.concat([Buffer.from(`${payload.length.toString(16).padStart(8, '0')}\n`), payload])
}

describe('framing on an agent without a token mode', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_MAX_FRAME_BYTES: '4096' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('waits on eight header bytes and refuses on the ninth when it is not a newline', async () => {
		const connection = openConnection(agent, Buffer.from('0000001a'), { allowHalfOpen: true })
		await delay(200)
		expect(connection.frames).toEqual([])
		expect(connection.socket.destroyed).toBe(false)
		connection.socket.write('x')
		const refusal = await connection.waitFor(() => true)
		expect(refusal).toMatchObject({ ok: false })
		expect(String(refusal.error)).toMatch(/^bad_frame_header/)
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('refuses a non-hex length prefix at once', async () => {
		const exchange = await rawRequest(agent, Buffer.from('zz'))
		expect(String(exchange.frames[0]?.error)).toMatch(/^bad_frame_header/)
	})

	it('refuses a header above NAMZU_AGENT_MAX_FRAME_BYTES naming length, limit and variable', async () => {
		const connection = openConnection(agent, Buffer.from('00001001\n{"op"'), {
			allowHalfOpen: true,
		})
		const refusal = await connection.waitFor(() => true)
		expect(refusal).toEqual({
			ok: false,
			error: 'frame_too_large: announced 4097 bytes, limit 4096 (NAMZU_AGENT_MAX_FRAME_BYTES)',
		})
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('accepts a first frame up to the full limit when no token mode applies', async () => {
		// Larger than a small pre-auth cap would allow, within NAMZU_AGENT_MAX_FRAME_BYTES.
		const exchange = await rawRequest(agent, {
			op: 'execute',
			body: {
				command: 'sh',
				args: ['-c', 'printf %s "$BIG" | wc -c'],
				env: { BIG: 'b'.repeat(3000) },
			},
		})
		expect(streamText(exchange, 'stdout').trim()).toBe('3000')
	})

	it('answers an unknown op with unknown_op naming it', async () => {
		const exchange = await rawRequest(agent, { op: 'frobnicate' })
		expect(exchange.frames).toEqual([{ ok: false, error: 'unknown_op: frobnicate' }])
		expect(exchange.closedBy).toBe('end')
	})

	it.each([
		['unparsable JSON', framed('{"op":')],
		['a JSON array', framed('[1,2]')],
		['a JSON string', framed('"healthz"')],
		['a terminator where the envelope belongs', Buffer.from('00000000\n')],
	])('closes the connection without an answer on %s', async (_name, bytes) => {
		const exchange = await rawRequest(agent, bytes)
		expect(exchange.frames).toEqual([])
		expect(exchange.closedBy).not.toBe('timeout')
	})

	it('keeps serving after a peer broke the framing', async () => {
		await rawRequest(agent, Buffer.from('nonsense'))
		const exchange = await rawRequest(agent, { op: 'healthz' })
		expect(lastFrame(exchange)).toMatchObject({ ok: true })
	})
})

describe('framing in a token mode', () => {
	let agent: StartedAgent
	const token = 'framing-token'
	beforeAll(async () => {
		agent = await startAgent({
			mode: 'tcp',
			env: {
				NAMZU_AGENT_BIND_TOKEN: token,
				NAMZU_AGENT_MAX_FRAME_BYTES: '8192',
				NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES: '1024',
			},
		})
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('refuses a first frame above NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES naming that variable', async () => {
		const connection = openConnection(agent, Buffer.from('00000401\n'), { allowHalfOpen: true })
		const refusal = await connection.waitFor(() => true)
		expect(refusal).toEqual({
			ok: false,
			error:
				'frame_too_large: announced 1025 bytes, limit 1024 (NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES)',
		})
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('lifts an authenticated connection to NAMZU_AGENT_MAX_FRAME_BYTES and names it when exceeded', async () => {
		const connection = openConnection(
			agent,
			{ op: 'execute', token, body: { command: 'sh', args: ['-c', 'echo started; sleep 5'] } },
			{ allowHalfOpen: true },
		)
		await connection.waitFor((frame) => frame.type === 'stdout_delta')
		connection.socket.write('00002001\n')
		const refusal = await connection.waitFor((frame) => frame.ok === false)
		expect(refusal.error).toBe(
			'frame_too_large: announced 8193 bytes, limit 8192 (NAMZU_AGENT_MAX_FRAME_BYTES)',
		)
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('accepts a later frame above the pre-auth ceiling once the connection authenticated', async () => {
		const connection = openConnection(agent, {
			op: 'execute',
			token,
			body: { command: 'sh', args: ['-c', 'echo started; sleep 0.3; echo done'] },
		})
		await connection.waitFor((frame) => frame.type === 'stdout_delta')
		connection.socket.write(framed(JSON.stringify({ pad: 'p'.repeat(2000) })))
		const result = await connection.waitFor((frame) => frame.type === 'result')
		expect(result).toMatchObject({ exitCode: 0 })
		expect(connection.frames.some((frame) => frame.ok === false)).toBe(false)
	})

	it('serves an authenticated first frame that fits under the pre-auth ceiling', async () => {
		const exchange = await rawRequest(agent, {
			op: 'execute',
			token,
			body: { command: 'sh', args: ['-c', 'echo ok'] },
		})
		expect(streamText(exchange, 'stdout')).toBe('ok\n')
	})
})
