/**
 * `restored` (wire/restored.ts) on a real agent over a real socket: the token switch refuses the
 * old token and closes what it opened, the new token is served, a malformed seed or token is
 * refused by name, and the agent's ids after different seeds differ even from identical state.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, rm, rmdir } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ReseedableRandom } from '../../../src/agent/lifecycle/agent-random.js'
import { reidentifyRestoredAgent } from '../../../src/host/lifecycle/restored-agent.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { openConnection, rawRequest } from '../agent-test-kit.js'

const OLD_TOKEN = 'token-before-the-restore-1f2e'
const NEW_TOKEN = 'token-of-this-fork-only-9a8b'

function seed(): string {
	return randomBytes(32).toString('base64')
}

async function bootIdWith(agent: StartedAgent, token?: string): Promise<unknown> {
	const reply = await rawRequest(agent, {
		op: 'reserve-execution',
		...(token === undefined ? {} : { token }),
	})
	return reply.frames[0]?.guestBootId
}

describe('ReseedableRandom: forks of one memory image', () => {
	// Two sources in identical states stand for two forks restored from the same image: same key,
	// same bytes underneath (a generator state copied with the memory).
	function twin(): ReseedableRandom {
		let n = 0
		const repeatable = (size: number) => Buffer.alloc(size, n++ % 256)
		return new ReseedableRandom(repeatable, Buffer.alloc(32, 7))
	}

	it('issues the same ids from identical state without a seed (the hazard)', () => {
		const a = twin()
		const b = twin()
		expect(a.uuid()).toBe(b.uuid())
	})

	it('issues different ids after different seeds', () => {
		const a = twin()
		const b = twin()
		a.mix(randomBytes(32))
		b.mix(randomBytes(32))
		const fromA = [a.uuid(), a.uuid(), a.uuid()]
		const fromB = [b.uuid(), b.uuid(), b.uuid()]
		for (const id of fromA) expect(fromB).not.toContain(id)
		expect(fromA[0]).toMatch(
			/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
		)
	})

	it('the same seed on identical state gives the same ids (the seed alone decides)', () => {
		const a = twin()
		const b = twin()
		const same = randomBytes(32)
		a.mix(same)
		b.mix(same)
		expect(a.uuid()).toBe(b.uuid())
	})
})

describe('restored on a tcp agent with a bound token', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: OLD_TOKEN } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('is refused without the current token', async () => {
		const exchange = await rawRequest(agent, {
			op: 'restored',
			token: 'guess',
			body: { seed: seed(), token: 'attacker-chosen' },
		})
		expect(exchange.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		expect(await bootIdWith(agent, OLD_TOKEN)).toEqual(expect.any(String))
	})

	it.each([
		['a missing seed', {}],
		['a seed of 31 bytes', { seed: randomBytes(31).toString('base64') }],
		['a seed of 33 bytes', { seed: randomBytes(33).toString('base64') }],
		['a seed that is not base64', { seed: '!'.repeat(44) }],
		['a seed that is not a string', { seed: 32 }],
	])('refuses %s as restored_invalid_seed and changes nothing', async (_name, body) => {
		const before = await bootIdWith(agent, OLD_TOKEN)
		const exchange = await rawRequest(agent, { op: 'restored', token: OLD_TOKEN, body })
		expect(exchange.frames[0]).toMatchObject({ ok: false, error: 'restored_invalid_seed' })
		expect(await bootIdWith(agent, OLD_TOKEN)).toBe(before)
	})

	it.each([
		['an empty token', ''],
		['a token that is not a string', 42],
		['an oversized token', 'x'.repeat(1025)],
	])('refuses %s as restored_invalid_token and keeps the old one', async (_name, token) => {
		const exchange = await rawRequest(agent, {
			op: 'restored',
			token: OLD_TOKEN,
			body: { seed: seed(), token },
		})
		expect(exchange.frames[0]).toMatchObject({ ok: false, error: 'restored_invalid_token' })
		expect(await bootIdWith(agent, OLD_TOKEN)).toEqual(expect.any(String))
	})

	it('switches the token: the old one is refused and what it opened is closed; the new one is served', async () => {
		const before = await bootIdWith(agent, OLD_TOKEN)
		// A terminal the old token opened stays open until the switch.
		const terminal = openConnection(agent, {
			op: 'terminal',
			token: OLD_TOKEN,
			body: { cols: 80, rows: 24 },
		})
		await terminal.waitFor((frame) => frame.type === 'ready')

		const exchange = await rawRequest(agent, {
			op: 'restored',
			token: OLD_TOKEN,
			body: { seed: seed(), token: NEW_TOKEN },
		})
		expect(exchange.frames[0]).toMatchObject({
			ok: true,
			kernelPoolMixed: expect.any(Boolean),
			kernelReseeded: expect.any(Boolean),
		})
		const bootId = exchange.frames[0]?.bootId
		expect(bootId).toEqual(expect.any(String))
		expect(bootId).not.toBe(before)

		// Attack: the token a memory image carried no longer opens anything, and its stream is gone.
		expect(await terminal.closed).toBe('end')
		const old = await rawRequest(agent, { op: 'reserve-execution', token: OLD_TOKEN })
		expect(old.frames).toEqual([{ ok: false, error: 'unauthorized' }])
		// Positive control: the new token is served, stamped with the new boot id.
		expect(await bootIdWith(agent, NEW_TOKEN)).toBe(bootId)
	})
})

describe('restored through the host helper', () => {
	let tcp: StartedAgent
	let unix: StartedAgent
	beforeAll(async () => {
		tcp = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: OLD_TOKEN } })
		unix = await startAgent()
	})
	afterAll(async () => {
		await Promise.all([tcp.stop(), unix.stop()])
	})

	it('rebinds a tcp transport to the new token and remembers the new boot id', async () => {
		const transport = new AgentTransport({
			kind: 'tcp',
			host: '127.0.0.1',
			port: tcp.port ?? 0,
			token: OLD_TOKEN,
		})
		const stale = new AgentTransport({
			kind: 'tcp',
			host: '127.0.0.1',
			port: tcp.port ?? 0,
			token: OLD_TOKEN,
		})
		const { bootId } = await reidentifyRestoredAgent(transport, { token: NEW_TOKEN })
		expect(transport.guestBootId).toBe(bootId)
		const reserved = await transport.request('reserve-execution', {})
		expect(reserved).toMatchObject({ ok: true, guestBootId: bootId })
		// Attack: a transport still holding the image's token is refused.
		expect(await stale.reserveExecution(AbortSignal.timeout(10_000))).toEqual({
			ok: false,
			error: 'unauthorized',
		})
	})

	it('re-identifies a unix agent without a token; a token there is refused before dialing', async () => {
		const transport = new AgentTransport({ kind: 'unix', path: unix.socketPath ?? '' })
		const before = await bootIdWith(unix)
		const { bootId } = await reidentifyRestoredAgent(transport)
		expect(bootId).not.toBe(before)
		expect(await bootIdWith(unix)).toBe(bootId)
		await expect(reidentifyRestoredAgent(transport, { token: NEW_TOKEN })).rejects.toMatchObject({
			name: 'SandboxArgumentError',
			parameter: 'token',
		})
		// The guest refuses it by name too, for a host that skips the check.
		const raw = await rawRequest(unix, { op: 'restored', body: { seed: seed(), token: 'x' } })
		expect(raw.frames[0]).toMatchObject({ ok: false, error: 'restored_token_unsupported' })
	})
})

describe('release-listener on a real unix agent', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent.stop()
	})

	async function answers(target: StartedAgent): Promise<boolean> {
		const exchange = await rawRequest(target, { op: 'healthz' }).catch(() => undefined)
		return exchange?.frames[0]?.ok === true
	}

	async function until(condition: () => Promise<boolean>): Promise<void> {
		const deadline = Date.now() + 20_000
		while (!(await condition())) {
			if (Date.now() > deadline) throw new Error('condition not met within 20 s')
			await new Promise((resolve) => setTimeout(resolve, 20))
		}
	}

	it('answers its pid, closes every connection and the listener, and binds again on SIGUSR2', async () => {
		const terminal = openConnection(agent, { op: 'terminal', body: { cols: 80, rows: 24 } })
		await terminal.waitFor((frame) => frame.type === 'ready')
		const exchange = await rawRequest(agent, {
			op: 'release-listener',
			body: { relistenAfterMs: 600_000 },
		})
		expect(exchange.frames).toEqual([{ ok: true, pid: agent.process.pid }])
		expect(await terminal.closed).toBe('end')
		await until(async () => !(await answers(agent)))
		process.kill(agent.process.pid ?? 0, 'SIGUSR2')
		await until(() => answers(agent))
		// Bound again: a second SIGUSR2 changes nothing and the agent lives on.
		process.kill(agent.process.pid ?? 0, 'SIGUSR2')
		expect(await answers(agent)).toBe(true)
	})

	it('binds again by itself after relistenAfterMs when no signal comes', async () => {
		await rawRequest(agent, { op: 'release-listener', body: { relistenAfterMs: 300 } })
		await until(async () => !(await answers(agent)))
		await until(() => answers(agent))
	})

	it('tries a failed bind again: once its path is free, the agent answers', async () => {
		const path = agent.socketPath ?? ''
		await rawRequest(agent, { op: 'release-listener', body: { relistenAfterMs: 600_000 } })
		await until(async () => !(await answers(agent)))
		// Something that is not a socket holds the path: the bind fails and is not given up on.
		await rm(path, { force: true })
		await mkdir(path)
		process.kill(agent.process.pid ?? 0, 'SIGUSR2')
		await until(async () => /relisten failed \(2\)/.test(agent.stderr()))
		expect(await answers(agent)).toBe(false)
		await rmdir(path)
		await until(() => answers(agent))
	})

	it('refuses a bound out of range by name', async () => {
		const exchange = await rawRequest(agent, {
			op: 'release-listener',
			body: { relistenAfterMs: 5 },
		})
		expect(exchange.frames[0]).toMatchObject({
			ok: false,
			error: 'release_listener_invalid_bound',
		})
		expect(await answers(agent)).toBe(true)
	})

	it('is refused by name on a tcp agent', async () => {
		const tcp = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: OLD_TOKEN } })
		try {
			const exchange = await rawRequest(tcp, {
				op: 'release-listener',
				token: OLD_TOKEN,
				body: {},
			})
			expect(exchange.frames[0]).toMatchObject({
				ok: false,
				error: 'release_listener_unsupported',
			})
		} finally {
			await tcp.stop()
		}
	})
})
