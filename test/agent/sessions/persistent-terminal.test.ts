import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import {
	attachSession,
	isAlive,
	output,
	persistentTerminal,
	readNumberFile,
	readSession,
	request,
	StreamSet,
	summaryOf,
	waitForExit,
	waitForOutput,
	waitUntil,
} from './session-kit.js'

let agent: StartedAgent
const streams = new StreamSet()
let counter = 0
const nextId = (label: string) => `${label}-${++counter}`

beforeAll(async () => {
	agent = await startAgent({ env: { NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS: '2000' } })
})
afterEach(() => streams.closeAll())
afterAll(async () => {
	streams.closeAll()
	await agent?.stop()
})

/** A shell that records every HUP/TERM/INT it receives and otherwise loops forever. */
function trappingShell(tag: string): { command: string; args: string[] } {
	const marker = join(agent.workspace, `${tag}.signals`)
	const pidFile = join(agent.workspace, `${tag}.pid`)
	const script = [
		`trap 'echo HUP >> ${marker}' HUP`,
		`trap 'echo TERM >> ${marker}' TERM`,
		`trap 'echo INT >> ${marker}' INT`,
		`echo $$ > ${pidFile}`,
		'echo looping',
		'while :; do sleep 0.05; done',
	].join('; ')
	return { command: '/bin/sh', args: ['-c', script] }
}

describe('persistent terminal', () => {
	it('survives its connection closing: the shell stays alive and receives no signal', async () => {
		const id = nextId('survive')
		const stream = persistentTerminal(streams, agent, id, trappingShell(id))
		const ready = await stream.waitFor((event) => event.type === 'ready')
		expect(ready).toMatchObject({
			sessionId: id,
			kind: 'terminal',
			state: 'running',
			fromOffset: 0,
			droppedBytes: 0,
		})
		await waitForOutput(stream, /looping/)
		const pid = await readNumberFile(join(agent.workspace, `${id}.pid`))
		stream.close()
		await stream.closed()
		// Give a hang-up or a kill every chance to arrive before looking.
		await new Promise((resolve) => setTimeout(resolve, 400))
		expect(isAlive(pid)).toBe(true)
		expect(existsSync(join(agent.workspace, `${id}.signals`))).toBe(false)
		expect(await summaryOf(agent, id)).toMatchObject({ state: 'running', attached: false })
		await request(agent, 'kill-session', { sessionId: id })
	})

	it('reattaches from another connection: replays from an offset, then follows live output', async () => {
		const id = nextId('reattach')
		const first = persistentTerminal(streams, agent, id)
		await first.waitFor((event) => event.type === 'ready')
		first.send({ type: 'input', data: 'echo first-$((1+1))\n' })
		await waitForOutput(first, /first-2\r\n/)
		const lastData = first.events.filter((event) => event.type === 'data').at(-1)
		const resumeAt = Number(lastData?.nextOffset)
		first.close()
		await first.closed()

		const full = attachSession(streams, agent, id, { fromOffset: 0 })
		const ready = await full.waitFor((event) => event.type === 'ready')
		expect(ready).toMatchObject({ sessionId: id, fromOffset: 0, droppedBytes: 0, state: 'running' })
		await waitForOutput(full, /first-2\r\n/)
		// One contiguous byte-offset space: every event starts where the previous one ended.
		let offset = 0
		for (const event of full.events.filter((e) => e.type === 'data')) {
			expect(event.offset).toBe(offset)
			offset = Number(event.nextOffset)
		}
		full.close()
		await full.closed()

		const tail = attachSession(streams, agent, id, { fromOffset: resumeAt })
		const tailReady = await tail.waitFor((event) => event.type === 'ready')
		expect(tailReady.fromOffset).toBe(resumeAt)
		tail.send({ type: 'input', data: 'echo second-$((2+2))\n' })
		await waitForOutput(tail, /second-4\r\n/)
		expect(output(tail)).not.toContain('first-2')
		await request(agent, 'kill-session', { sessionId: id })
		const exit = await tail.waitFor((event) => event.type === 'exit')
		expect(exit.nextOffset).toBe((await summaryOf(agent, id))?.nextOffset)
		await tail.closed()
		expect(tail.terminated()).toBe(true)
	})

	it('takes input and resize on an attachment, and applies the size the attach names', async () => {
		const id = nextId('resize')
		const opener = persistentTerminal(streams, agent, id)
		await opener.waitFor((event) => event.type === 'ready')
		opener.close()
		const attached = attachSession(streams, agent, id, { cols: 91, rows: 17 })
		await attached.waitFor((event) => event.type === 'ready')
		await waitUntil(async () => {
			attached.send({ type: 'input', data: 'stty size\n' })
			await new Promise((resolve) => setTimeout(resolve, 50))
			return /(?<!\d)17 91\r\n/.test(output(attached))
		}, 'the attach size')
		attached.send({ type: 'resize', cols: 120, rows: 40 })
		await waitUntil(async () => {
			attached.send({ type: 'input', data: 'stty size\n' })
			await new Promise((resolve) => setTimeout(resolve, 50))
			return /(?<!\d)40 120\r\n/.test(output(attached))
		}, 'the resized size')
		expect((await summaryOf(agent, id))?.lastInputAt).toEqual(expect.any(Number))
		await request(agent, 'kill-session', { sessionId: id })
	})

	it('lets a second attach supersede the first, which is told so by name and sent no signal', async () => {
		const id = nextId('supersede')
		const opener = persistentTerminal(streams, agent, id, trappingShell(id))
		await waitForOutput(opener, /looping/)
		const pid = await readNumberFile(join(agent.workspace, `${id}.pid`))
		const second = attachSession(streams, agent, id)
		await second.waitFor((event) => event.type === 'ready')
		const detached = await opener.waitFor((event) => event.type === 'detached')
		expect(detached).toEqual({
			type: 'detached',
			reason: 'superseded',
			nextOffset: expect.any(Number),
		})
		await opener.closed()
		expect(opener.terminated()).toBe(true)
		expect(isAlive(pid)).toBe(true)
		expect(existsSync(join(agent.workspace, `${id}.signals`))).toBe(false)
		expect(await summaryOf(agent, id)).toMatchObject({ attached: true, state: 'running' })
		await request(agent, 'kill-session', { sessionId: id })
	})

	it('keeps draining a program nobody is attached to, so more than 64 KiB of output never stalls it', async () => {
		const id = nextId('drain')
		const bytes = 300_000
		// The request is sent and the connection dropped at once: nobody ever reads this terminal.
		await rawRequest(
			agent,
			{
				op: 'terminal',
				body: {
					cols: 80,
					rows: 24,
					sessionId: id,
					persistent: true,
					command: '/bin/sh',
					args: ['-c', `head -c ${bytes} /dev/zero | tr '\\0' x; echo; echo drained-$((6*7))`],
				},
			},
			{ timeoutMs: 50 },
		)
		await waitForExit(agent, id)
		const summary = await summaryOf(agent, id)
		expect(summary).toMatchObject({ state: 'exited', exitCode: 0, attached: false })
		expect(Number(summary?.nextOffset)).toBeGreaterThan(bytes)
		const tail = await readSession(agent, id, Number(summary?.nextOffset) - 64)
		expect(tail.chunk).toContain('drained-42')
	})

	it('replays an exited session and ends the attachment with its exit code', async () => {
		const id = nextId('exited')
		const stream = persistentTerminal(streams, agent, id, {
			command: '/bin/sh',
			args: ['-c', 'echo bye-now; exit 3'],
		})
		await stream.waitFor((event) => event.type === 'exit')
		await waitForExit(agent, id)
		const again = attachSession(streams, agent, id, { fromOffset: 0 })
		const ready = await again.waitFor((event) => event.type === 'ready')
		expect(ready).toMatchObject({ state: 'exited', exitCode: 3 })
		const exit = await again.waitFor((event) => event.type === 'exit')
		expect(exit).toMatchObject({ exitCode: 3 })
		expect(output(again)).toContain('bye-now')
		await again.closed()
		expect(again.terminated()).toBe(true)
	})

	it('serves a read (follow: false) while a terminal is attached without displacing it', async () => {
		const id = nextId('read')
		const attached = persistentTerminal(streams, agent, id)
		await attached.waitFor((event) => event.type === 'ready')
		attached.send({ type: 'input', data: 'echo before-$((3*3))\n' })
		await waitForOutput(attached, /before-9\r\n/)
		const read = await readSession(agent, id, 0)
		expect(read).toMatchObject({
			type: 'output',
			sessionId: id,
			fromOffset: 0,
			droppedBytes: 0,
			status: 'running',
		})
		expect(read.chunk).toContain('before-9')
		expect(attached.events.some((event) => event.type === 'detached')).toBe(false)
		attached.send({ type: 'input', data: 'echo after-$((4*4))\n' })
		await waitForOutput(attached, /after-16\r\n/)
		expect(await summaryOf(agent, id)).toMatchObject({ attached: true })
		await request(agent, 'kill-session', { sessionId: id })
	})

	it('refuses a persistent request without a valid id, and a plain terminal stays connection-bound', async () => {
		const noId = await rawRequest(agent, {
			op: 'terminal',
			body: { cols: 80, rows: 24, persistent: true },
		})
		expect(noId.frames).toEqual([{ type: 'error', error: 'invalid_session_id' }])
		const noFlag = await rawRequest(agent, {
			op: 'terminal',
			body: { cols: 80, rows: 24, sessionId: 'ok-id' },
		})
		expect(noFlag.frames).toEqual([{ type: 'error', error: 'invalid_session_request' }])
		const plain = streams.open(agent, { op: 'terminal', body: { cols: 80, rows: 24 } })
		await plain.waitFor((event) => event.type === 'ready')
		const listed = (await request(agent, 'list-sessions')).sessions as unknown[]
		expect(listed.some((s) => (s as { sessionId: string }).sessionId === 'ok-id')).toBe(false)
		plain.close()
	})

	it('refuses a second session under a held id with session_exists', async () => {
		const id = nextId('dup')
		const first = persistentTerminal(streams, agent, id)
		await first.waitFor((event) => event.type === 'ready')
		const second = await rawRequest(agent, {
			op: 'terminal',
			body: { cols: 80, rows: 24, sessionId: id, persistent: true },
		})
		expect(second.frames).toEqual([{ type: 'error', error: 'session_exists' }])
		await request(agent, 'kill-session', { sessionId: id })
	})
})
