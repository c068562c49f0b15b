import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type DialOptions, dialAgent } from '../../../src/host/transport/dial.js'
import { AgentDialFailedError } from '../../../src/host/transport/transport-errors.js'

let dir: string
const servers: Server[] = []

beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-dial-'))
})

afterEach(async () => {
	for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
	await rm(dir, { recursive: true, force: true })
})

function options(overrides: Partial<DialOptions> = {}): DialOptions {
	return {
		connectTimeoutMs: 1000,
		connectRetryBudgetMs: 400,
		connectRetryIntervalMs: 50,
		permanentDialFailure: () => false,
		...overrides,
	}
}

function listen(path: string): Promise<Server> {
	const server = createServer((socket) => socket.end())
	servers.push(server)
	return new Promise((resolve) => server.listen(path, () => resolve(server)))
}

describe('dialAgent', () => {
	it('gives up with AgentDialFailedError after retrying a path with no listener for the budget', async () => {
		const error = await dialAgent(
			{ kind: 'unix', path: join(dir, 'absent.sock') },
			options(),
		).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		const failed = error as AgentDialFailedError
		expect(failed.handleKind).toBe('unix')
		expect(failed.attempts).toBeGreaterThan(1)
		expect(failed.retryable).toBe(true)
		expect((failed.cause as NodeJS.ErrnoException).code).toBe('ENOENT')
	})

	it('reaches a listener that appears later within the retry budget', async () => {
		const path = join(dir, 'late.sock')
		const dials: number[] = []
		setTimeout(() => void listen(path), 250)
		const socket = await dialAgent(
			{ kind: 'unix', path },
			options({ connectRetryBudgetMs: 5000, onDial: (event) => dials.push(event.attempts) }),
		)
		socket.destroy()
		expect(dials).toHaveLength(1)
		expect(dials[0]).toBeGreaterThan(1)
	})

	it('stops at the first attempt when permanentDialFailure says the error is permanent', async () => {
		const seen: Error[] = []
		const error = await dialAgent(
			{ kind: 'unix', path: join(dir, 'absent.sock') },
			options({
				connectRetryBudgetMs: 10_000,
				permanentDialFailure: (failure) => {
					seen.push(failure)
					return true
				},
			}),
		).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect((error as AgentDialFailedError).attempts).toBe(1)
		expect((error as AgentDialFailedError).reason).toBe('dial-failed-permanently')
		expect(seen).toHaveLength(1)
	})

	it('rejects with the signal reason when aborted between attempts', async () => {
		const controller = new AbortController()
		const reason = new Error('caller gave up')
		setTimeout(() => controller.abort(reason), 120)
		const error = await dialAgent(
			{ kind: 'unix', path: join(dir, 'absent.sock') },
			options({ connectRetryBudgetMs: 10_000 }),
			controller.signal,
		).catch((caught: unknown) => caught)
		expect(error).toBe(reason)
	})

	it('bounds each attempt by connectTimeoutMs when the peer never completes the vsock handshake', async () => {
		const path = join(dir, 'silent.sock')
		const server = createServer((socket) => socket.resume())
		servers.push(server)
		await new Promise<void>((resolve) => server.listen(path, resolve))
		const error = await dialAgent(
			{ kind: 'vsock', udsPath: path, port: 1024 },
			options({ connectTimeoutMs: 100, connectRetryBudgetMs: 250 }),
		).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect((error as AgentDialFailedError).cause).toMatchObject({ name: 'ConnectTimeoutError' })
		expect((error as AgentDialFailedError).handleKind).toBe('vsock')
	})
})
