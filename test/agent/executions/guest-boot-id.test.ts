import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { openAgentStream } from '../agent-stream.js'
import { newExecutionId, reserve } from './execution-kit.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

async function single(agent: StartedAgent, op: string, body?: object) {
	const exchange = await rawRequest(agent, body === undefined ? { op } : { op, body })
	const reply = exchange.frames[0]
	if (!reply) throw new Error(`${op}: no reply`)
	return reply
}

async function readyOf(agent: StartedAgent, op: string, body: object) {
	const stream = openAgentStream(agent, { op, body })
	try {
		return await stream.waitFor((event) => event.type === 'ready')
	} finally {
		stream.close()
	}
}

describe('guestBootId and the advertised features', () => {
	let agent: StartedAgent
	let upstream: Server
	let port = 0
	beforeAll(async () => {
		agent = await startAgent()
		upstream = createServer((socket) => socket.end())
		await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
		const address = upstream.address()
		if (address === null || typeof address === 'string') throw new Error('no port')
		port = address.port
	})
	afterAll(async () => {
		await agent.stop()
		await new Promise((resolve) => upstream.close(resolve))
	})

	it('lists execution-attach and guest-boot-id in healthz features without bumping protocol version 2', async () => {
		const health = await single(agent, 'healthz')
		expect(health).toMatchObject({ ok: true, protocolVersion: 2 })
		expect(health.features).toEqual(expect.arrayContaining(['execution-attach', 'guest-boot-id']))
		expect(health).not.toHaveProperty('guestBootId')
	})

	it('stamps one stable guestBootId on reserve, cancel (unknown_execution too), read-file, write-file and the terminal and tcp ready frames', async () => {
		const id = newExecutionId()
		const seen = [
			await reserve(agent, id),
			await reserve(agent),
			await single(agent, 'cancel-execution', { executionId: id }),
			await single(agent, 'cancel-execution', { executionId: newExecutionId() }),
			await single(agent, 'write-file', { path: 'boot.txt', content: 'x' }),
			await single(agent, 'read-file', { path: 'boot.txt' }),
			await single(agent, 'read-file', { path: 'boot.txt', encoding: 'base64', offset: 0 }),
			await readyOf(agent, 'terminal', { command: '/bin/sh', cols: 80, rows: 24 }),
			await readyOf(agent, 'tcp-connect', { port }),
		]
		expect(seen[3]).toMatchObject({ ok: false, error: 'unknown_execution' })
		const ids = new Set(seen.map((reply) => reply.guestBootId))
		expect(ids.size).toBe(1)
		expect([...ids][0]).toMatch(UUID)
	})

	it('mints a different guestBootId in a restarted agent', async () => {
		const before = (await reserve(agent)).guestBootId
		const restarted = await startAgent()
		try {
			const after = (await reserve(restarted)).guestBootId
			expect(after).toMatch(UUID)
			expect(after).not.toBe(before)
		} finally {
			await restarted.stop()
		}
	})
})
