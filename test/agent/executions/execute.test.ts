import { existsSync, realpathSync, symlinkSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { delay, lastFrame, rawRequest, streamText } from '../agent-test-kit.js'

function run(agent: StartedAgent, body: object, token?: string) {
	return rawRequest(agent, { op: 'execute', body, ...(token ? { token } : {}) })
}

describe('execute', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_SANDBOX_MAX_TIMEOUT_MS: '60000' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it.each([0, 1, 7, 255])('reports exit code %i in the result', async (code) => {
		const exchange = await run(agent, { command: 'sh', args: ['-c', `exit ${code}`] })
		expect(lastFrame(exchange)).toMatchObject({
			type: 'result',
			exitCode: code,
			timedOut: false,
			stdoutTruncated: false,
			stderrTruncated: false,
		})
		expect(lastFrame(exchange)?.signal).toBeUndefined()
		expect(lastFrame(exchange)?.cancelled).toBeUndefined()
		expect(exchange.terminated).toBe(true)
	})

	it('streams stdout and stderr as deltas, then exactly one result, then the terminator', async () => {
		const exchange = await run(agent, {
			command: 'sh',
			args: ['-c', 'echo one; echo two >&2; sleep 0.1; echo three'],
		})
		expect(streamText(exchange, 'stdout')).toBe('one\nthree\n')
		expect(streamText(exchange, 'stderr')).toBe('two\n')
		expect(exchange.frames.filter((frame) => frame.type === 'result')).toHaveLength(1)
		expect(lastFrame(exchange)?.type).toBe('result')
		expect(exchange.terminated).toBe(true)
		expect(typeof lastFrame(exchange)?.durationMs).toBe('number')
	})

	it('passes args verbatim without a shell', async () => {
		const exchange = await run(agent, { command: 'printf', args: ['%s|', 'a b', '$HOME', '*'] })
		expect(streamText(exchange, 'stdout')).toBe('a b|$HOME|*|')
	})

	it('writes stdin to the child and then closes it', async () => {
		const exchange = await run(agent, { command: 'cat', stdin: 'hello\nwörld' })
		expect(streamText(exchange, 'stdout')).toBe('hello\nwörld')
	})

	it('closes stdin at once when none is given, so a reader sees end of file', async () => {
		const exchange = await run(agent, { command: 'cat' })
		expect(lastFrame(exchange)).toMatchObject({ type: 'result', exitCode: 0 })
		expect(streamText(exchange, 'stdout')).toBe('')
	})

	it('layers the caller env over the inherited environment, the caller winning', async () => {
		const exchange = await run(agent, {
			command: 'sh',
			args: ['-c', 'echo "$FOO|$HOME"'],
			env: { FOO: 'bar', HOME: '/caller-home' },
		})
		expect(streamText(exchange, 'stdout')).toBe('bar|/caller-home\n')
		const inherited = await run(agent, { command: 'sh', args: ['-c', 'echo "$HOME"'] })
		expect(streamText(inherited, 'stdout')).toBe(`${agent.dir}\n`)
	})

	it('decodes a UTF-8 character split across two writes without mangling it', async () => {
		const script =
			'process.stdout.write(Buffer.from([0xc3])); setTimeout(() => process.stdout.write(Buffer.from([0xa9, 0x0a])), 100)'
		const exchange = await run(agent, { command: process.execPath, args: ['-e', script] })
		expect(streamText(exchange, 'stdout')).toBe('é\n')
		expect(exchange.frames.filter((frame) => frame.type === 'stdout_delta').length).toBeGreaterThan(
			0,
		)
	})

	it('stops forwarding output past maxOutputBytes and reports the stream truncated', async () => {
		const exchange = await run(agent, {
			command: 'sh',
			args: ['-c', 'printf abcdefghijklmnopqrstuvwxyz; printf short >&2'],
			maxOutputBytes: 10,
		})
		expect(streamText(exchange, 'stdout')).toBe('abcdefghij')
		expect(streamText(exchange, 'stderr')).toBe('short')
		expect(lastFrame(exchange)).toMatchObject({ stdoutTruncated: true, stderrTruncated: false })
	})

	it('runs in the workspace by default and resolves a relative cwd under it', async () => {
		await mkdir(join(agent.workspace, 'sub'))
		const root = await run(agent, { command: 'pwd' })
		expect(streamText(root, 'stdout')).toBe(`${realpathSync(agent.workspace)}\n`)
		const sub = await run(agent, { command: 'pwd', cwd: 'sub' })
		expect(streamText(sub, 'stdout')).toBe(`${realpathSync(join(agent.workspace, 'sub'))}\n`)
	})

	it.each([
		['a parent escape', '..'],
		['an absolute path outside', '/etc'],
		['a missing directory', 'does-not-exist'],
		['a symlink out of the workspace', 'link-out'],
	])('refuses %s as cwd with invalid_cwd', async (_name, cwd) => {
		if (cwd === 'link-out' && !existsSync(join(agent.workspace, 'link-out'))) {
			symlinkSync('/tmp', join(agent.workspace, 'link-out'))
		}
		const exchange = await run(agent, { command: 'pwd', cwd })
		expect(exchange.frames).toHaveLength(1)
		expect(String(lastFrame(exchange)?.error)).toMatch(/^invalid_cwd: /)
		expect(lastFrame(exchange)?.type).toBe('error')
		expect(exchange.terminated).toBe(true)
	})

	it('names the workspace root when a run without cwd finds it missing', async () => {
		const bare = await startAgent({ env: { NAMZU_SANDBOX_WORKSPACE: join(agent.dir, 'absent') } })
		try {
			const exchange = await run(bare, { command: 'pwd' })
			expect(String(lastFrame(exchange)?.error)).toBe(
				`invalid_cwd: no such directory: ${join(agent.dir, 'absent')} (the workspace root, NAMZU_SANDBOX_WORKSPACE)`,
			)
		} finally {
			await bare.stop()
		}
	})

	it('refuses a missing command with missing_command in the stream shape', async () => {
		const exchange = await run(agent, { args: ['x'] })
		expect(exchange.frames).toEqual([{ type: 'error', error: 'missing_command' }])
		expect(exchange.terminated).toBe(true)
	})

	it('refuses a timeout above NAMZU_SANDBOX_MAX_TIMEOUT_MS rather than clamping it, naming the variable', async () => {
		const exchange = await run(agent, { command: 'true', timeoutMs: 60_001 })
		const error = String(lastFrame(exchange)?.error)
		expect(error).toMatch(/^invalid_timeout: /)
		expect(error).toContain('NAMZU_SANDBOX_MAX_TIMEOUT_MS')
		expect(exchange.frames.some((frame) => frame.type === 'result')).toBe(false)
	})

	it.each([0, -5, 1.5, '100'])('refuses timeoutMs %s as invalid_timeout', async (timeoutMs) => {
		const exchange = await run(agent, { command: 'true', timeoutMs })
		expect(String(lastFrame(exchange)?.error)).toMatch(/^invalid_timeout: /)
	})

	it('reports a command that cannot be spawned as an error event', async () => {
		const exchange = await run(agent, { command: '/definitely/not/here' })
		expect(exchange.frames).toHaveLength(1)
		expect(lastFrame(exchange)?.type).toBe('error')
		expect(String(lastFrame(exchange)?.error)).toContain('ENOENT')
		expect(exchange.terminated).toBe(true)
	})

	it('terminates a command at its timeout: timedOut is true and its later work never happens', async () => {
		const marker = join(agent.workspace, 'timeout-marker')
		const exchange = await run(agent, {
			command: 'sh',
			args: ['-c', 'sleep 1.5; touch timeout-marker'],
			timeoutMs: 200,
		})
		expect(lastFrame(exchange)).toMatchObject({ type: 'result', timedOut: true, signal: 'SIGTERM' })
		await delay(1_800)
		expect(existsSync(marker)).toBe(false)
	})

	it('kills an unreserved run when its connection closes', async () => {
		const marker = join(agent.workspace, 'orphan-marker')
		await rawRequest(
			agent,
			{ op: 'execute', body: { command: 'sh', args: ['-c', 'sleep 1; touch orphan-marker'] } },
			{ timeoutMs: 200 },
		)
		await delay(1_300)
		expect(existsSync(marker)).toBe(false)
	})
})

describe('execute environment scrub', () => {
	const token = 'scrub-secret-token-1f2e'
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({
			env: { NAMZU_AGENT_BIND_TOKEN: token, NAMZU_AGENT_CANCEL_GRACE_MS: '100' },
		})
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('hands the child no NAMZU_ variable even though the agent has the token and workspace set', async () => {
		const exchange = await run(agent, { command: 'env' }, token)
		const lines = streamText(exchange, 'stdout').split('\n')
		expect(lines.some((line) => line.startsWith('PATH='))).toBe(true)
		expect(lines.filter((line) => line.startsWith('NAMZU_'))).toEqual([])
		expect(streamText(exchange, 'stdout')).not.toContain(token)
	})
})
