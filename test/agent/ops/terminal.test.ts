import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { isRunning } from '../../helpers/process-running.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { type AgentStream, openAgentStream } from '../agent-stream.js'

let agent: StartedAgent
const streams: AgentStream[] = []

beforeAll(async () => {
	agent = await startAgent({
		// A value the terminal must never see, beside the listen and workspace variables.
		env: { NAMZU_AGENT_TEST_MARKER: 'must-not-leak' },
	})
})
afterAll(async () => {
	for (const stream of streams) stream.close()
	await agent?.stop()
})

function open(body: object): AgentStream {
	const stream = openAgentStream(agent, { op: 'terminal', body: { cols: 80, rows: 24, ...body } })
	streams.push(stream)
	return stream
}

function output(stream: AgentStream): string {
	return stream.events
		.filter((event) => event.type === 'data')
		.map((event) => String(event.data))
		.join('')
}

/** Waits until the terminal's accumulated output matches `pattern`; returns the match. */
async function waitForOutput(stream: AgentStream, pattern: RegExp): Promise<RegExpMatchArray> {
	let match: RegExpMatchArray | null = null
	await stream.waitFor(() => {
		match = output(stream).match(pattern)
		return match !== null
	})
	if (match === null) throw new Error('unreachable')
	return match
}

/** A live process, not a zombie awaiting its reaper. */
const isAlive = isRunning

async function waitUntilGone(pid: number): Promise<boolean> {
	for (let attempt = 0; attempt < 200; attempt++) {
		if (!isAlive(pid)) return true
		await new Promise((resolve) => setTimeout(resolve, 25))
	}
	return false
}

describe('terminal', () => {
	it('answers ready, then runs typed input in a PTY', async () => {
		const stream = open({})
		await stream.waitFor((event) => event.type === 'ready')
		expect(stream.events[0]).toEqual({ type: 'ready', guestBootId: expect.any(String) })
		stream.send({ type: 'input', data: 'echo hi\n' })
		// The command's output, not the PTY's echo of what was typed.
		await waitForOutput(stream, /(?<!echo )hi\r\n/)
		stream.send({ type: 'input', data: 'tty\n' })
		await waitForOutput(stream, /\/dev\/pts\/\d+\r\n/)
		stream.close()
	})

	it('queues input sent before ready and delivers it once the terminal is up', async () => {
		const stream = open({})
		stream.send({ type: 'input', data: 'echo early-$((40+2))\n' })
		await waitForOutput(stream, /early-42/)
		stream.close()
	})

	it('sets the initial size and changes it on resize, as stty size reports', async () => {
		const stream = open({ cols: 91, rows: 17 })
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'stty size\n' })
		await waitForOutput(stream, /(?<!\d)17 91\r\n/)
		stream.send({ type: 'resize', cols: 120, rows: 40 })
		// The resize helper runs asynchronously; ask until the new size shows.
		for (let attempt = 0; attempt < 50 && !/(?<!\d)40 120\r\n/.test(output(stream)); attempt++) {
			stream.send({ type: 'input', data: 'stty size\n' })
			await new Promise((resolve) => setTimeout(resolve, 50))
		}
		await waitForOutput(stream, /(?<!\d)40 120\r\n/)
		stream.close()
	})

	it('gives the shell an environment without NAMZU_ variables, where the caller env wins over TERM', async () => {
		const stream = open({ env: { TERM: 'vt100', CALLER_VALUE: 'from-caller' } })
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'env; echo END-$((1+1))\n' })
		const text = (await waitForOutput(stream, /[\s\S]*END-2/))[0]
		expect(text).toContain('TERM=vt100')
		expect(text).toContain('CALLER_VALUE=from-caller')
		expect(text).not.toMatch(/NAMZU_[A-Z_]*=/)
		expect(text).not.toContain('must-not-leak')
		stream.close()
	})

	it('defaults TERM to xterm-256color and starts in the workspace', async () => {
		const stream = open({})
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'echo "T=$TERM"; pwd\n' })
		await waitForOutput(stream, /T=xterm-256color\r\n/)
		await waitForOutput(stream, new RegExp(`${agent.workspace}\\r\\n`))
		stream.close()
	})

	it('runs a given command with arguments in a jailed cwd, and reports its exit code', async () => {
		mkdirSync(join(agent.workspace, 'sub'), { recursive: true })
		const stream = open({
			command: '/bin/sh',
			args: ['-c', 'pwd; echo "$1"; exit 7', 'sh', "it's quoted"],
			cwd: 'sub',
		})
		await stream.waitFor((event) => event.type === 'exit')
		await stream.closed()
		expect(output(stream)).toContain(join(agent.workspace, 'sub'))
		expect(output(stream)).toContain("it's quoted")
		expect(stream.events.at(-1)).toEqual({ type: 'exit', exitCode: 7 })
		expect(stream.terminated()).toBe(true)
	})

	it('kills a job backgrounded with & once the connection closes', async () => {
		const stream = open({})
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'sleep 300 & echo "BG=$!"\n' })
		const pid = Number((await waitForOutput(stream, /BG=(\d+)/))[1])
		expect(isAlive(pid)).toBe(true)
		stream.close()
		expect(await waitUntilGone(pid)).toBe(true)
	})

	it('ends on kill with an exit event and takes backgrounded jobs with it', async () => {
		const stream = open({})
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'sleep 300 & echo "BG=$!"\n' })
		const pid = Number((await waitForOutput(stream, /BG=(\d+)/))[1])
		stream.send({ type: 'kill', signal: 'SIGKILL' })
		const exit = await stream.waitFor((event) => event.type === 'exit')
		expect(typeof exit.exitCode).toBe('number')
		await stream.closed()
		expect(stream.terminated()).toBe(true)
		expect(await waitUntilGone(pid)).toBe(true)
	})

	it('treats a kill with a signal outside the allow-list as SIGTERM, which ends the terminal', async () => {
		const stream = open({})
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'kill', signal: 'SIGSTOP' })
		await stream.waitFor((event) => event.type === 'exit')
		await stream.closed()
		expect(stream.terminated()).toBe(true)
	})

	it('refuses a size outside 1..1000 and a cwd outside the workspace in the stream shape', async () => {
		const tooWide = await rawRequest(agent, { op: 'terminal', body: { cols: 1001, rows: 24 } })
		expect(tooWide.frames).toEqual([{ type: 'error', error: 'invalid_terminal_size' }])
		const escaped = await rawRequest(agent, {
			op: 'terminal',
			body: { cols: 80, rows: 24, cwd: '/etc' },
		})
		expect(escaped.frames).toEqual([{ type: 'error', error: 'path_escapes_workspace' }])
		expect(escaped.terminated).toBe(true)
		expect(existsSync(agent.workspace)).toBe(true)
	})
})
