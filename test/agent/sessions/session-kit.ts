/**
 * Helpers for the session tests: open persistent terminals and attachments as raw two-way streams
 * against the real agent, read their output, and watch processes through /proc. Test-only.
 */
import { existsSync, readFileSync } from 'node:fs'
import type { StartedAgent } from '../../helpers/agent-process.js'
import { isRunning } from '../../helpers/process-running.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { type AgentStream, openAgentStream } from '../agent-stream.js'

export class StreamSet {
	readonly #streams: AgentStream[] = []

	open(agent: StartedAgent, envelope: object): AgentStream {
		const stream = openAgentStream(agent, envelope)
		this.#streams.push(stream)
		return stream
	}

	closeAll(): void {
		for (const stream of this.#streams.splice(0)) stream.close()
	}
}

export function persistentTerminal(
	streams: StreamSet,
	agent: StartedAgent,
	sessionId: string,
	body: object = {},
): AgentStream {
	return streams.open(agent, {
		op: 'terminal',
		body: { cols: 80, rows: 24, sessionId, persistent: true, ...body },
	})
}

export function attachSession(
	streams: StreamSet,
	agent: StartedAgent,
	sessionId: string,
	body: object = {},
): AgentStream {
	return streams.open(agent, { op: 'attach-session', body: { sessionId, ...body } })
}

/** Everything the `data` events of `stream` carried, in order. */
export function output(stream: AgentStream): string {
	return stream.events
		.filter((event) => event.type === 'data')
		.map((event) => String(event.data))
		.join('')
}

export async function waitForOutput(
	stream: AgentStream,
	pattern: RegExp,
): Promise<RegExpMatchArray> {
	let match: RegExpMatchArray | null = null
	await stream.waitFor(() => {
		match = output(stream).match(pattern)
		return match !== null
	})
	if (match === null) throw new Error('unreachable')
	return match
}

/** One request-shaped op; answers its single reply frame. */
export async function request(
	agent: StartedAgent,
	op: string,
	body: object = {},
): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, { op, body })
	const [reply] = exchange.frames
	if (!reply) throw new Error(`${op}: no reply (${exchange.closedBy})`)
	return reply
}

/** `attach-session` with `follow: false`: the frames of the one-shot read. */
export async function readSession(
	agent: StartedAgent,
	sessionId: string,
	fromOffset?: number,
): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, {
		op: 'attach-session',
		body: { sessionId, follow: false, ...(fromOffset === undefined ? {} : { fromOffset }) },
	})
	const [event] = exchange.frames
	if (!event || !exchange.terminated) throw new Error('attach-session read did not terminate')
	return event
}

export async function summaryOf(
	agent: StartedAgent,
	sessionId: string,
): Promise<Record<string, unknown> | undefined> {
	const reply = await request(agent, 'list-sessions')
	const sessions = reply.sessions as Record<string, unknown>[]
	return sessions.find((session) => session.sessionId === sessionId)
}

export async function waitUntil(
	condition: () => boolean | Promise<boolean>,
	what: string,
	attempts = 400,
	intervalMs = 25,
): Promise<void> {
	for (let attempt = 0; attempt < attempts; attempt++) {
		if (await condition()) return
		await new Promise((resolve) => setTimeout(resolve, intervalMs))
	}
	throw new Error(`timed out waiting for ${what}`)
}

export async function waitForExit(agent: StartedAgent, sessionId: string): Promise<void> {
	await waitUntil(async () => (await summaryOf(agent, sessionId))?.state === 'exited', sessionId)
}

/** A live process, not a zombie awaiting its reaper. */
export const isAlive = isRunning

/** `[pid, pgrp, session]` from /proc/<pid>/stat. */
export function procIds(pid: number): { pid: number; pgrp: number; session: number } {
	const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
	const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
	return { pid, pgrp: Number(fields[2]), session: Number(fields[3]) }
}

export async function readNumberFile(path: string): Promise<number> {
	await waitUntil(() => existsSync(path) && readFileSync(path, 'utf8').trim() !== '', path)
	return Number(readFileSync(path, 'utf8').trim())
}
