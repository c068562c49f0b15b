/**
 * The agent refuses a path over the limits itself (it trusts no host), at once and by code, on
 * every op that takes one, and keeps serving meanwhile: a 100 KB path used to block its event
 * loop for a minute. Whether that is fast is bench/jail-paths.mjs's claim; here only that healthz
 * is answered while and after the refusal, and that a path right at the limit still works.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { lastFrame } from '../agent-test-kit.js'

let agent: StartedAgent

beforeAll(async () => {
	agent = await startAgent()
})
afterAll(() => agent?.stop())

async function first(op: string, body: object): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, { op, body }, { timeoutMs: 20_000 })
	const frame = exchange.frames[0]
	if (!frame) throw new Error(`no answer to ${op}`)
	return frame
}

const LONG = 'a/'.repeat(51_200)
const TOO_LONG = 'path must be at most 4096 bytes (UTF-8), got 102400 bytes'

describe('paths over the limits, refused by the agent itself', () => {
	it.each([
		['read-file', { path: LONG }],
		['read-file-stream', { path: LONG }],
		['write-file', { path: LONG, content: 'x' }],
		['list-files', { path: LONG }],
	])('%s refuses a 100 KB path as path_too_long without repeating it', async (op, body) => {
		const answer = await first(op, body)
		expect(answer.error).toBe('path_too_long')
		expect(answer.message ?? '').toBe(op === 'read-file-stream' ? '' : TOO_LONG)
		expect(JSON.stringify(answer).length).toBeLessThan(500)
	})

	it.each([
		['a 256-byte component', 'path_component_too_long', `dir/${'c'.repeat(256)}`],
		['a NUL byte', 'path_contains_nul', 'a\0b'],
		[
			'a relative path that grows over the limit under the workspace',
			'path_too_long',
			'b/'.repeat(2046),
		],
	])('read-file refuses %s as %s', async (_title, code, path) => {
		expect(await first('read-file', { path })).toMatchObject({ ok: false, error: code })
	})

	it('execute refuses an over-long cwd before spawning anything', async () => {
		const exchange = await rawRequest(agent, {
			op: 'execute',
			body: { command: 'sh', args: ['-c', 'echo ran'], cwd: LONG },
		})
		const answer = lastFrame(exchange)
		expect(String(answer?.error)).toBe(`invalid_cwd: ${TOO_LONG}`)
		expect(exchange.frames.some((frame) => frame.type === 'stdout_delta')).toBe(false)
	})

	it('answers healthz while refusing over-long paths and after', async () => {
		const refusals = Array.from({ length: 8 }, () => first('read-file', { path: LONG }))
		const health = first('healthz', {})
		expect(await health).toMatchObject({ ok: true })
		for (const refusal of await Promise.all(refusals)) expect(refusal.error).toBe('path_too_long')
		expect(await first('healthz', {})).toMatchObject({ ok: true })
	})

	it('positive control: the longest path the kernel takes (4095 bytes, 2000 directories deep) is served', async () => {
		// PATH_MAX (4096) counts the terminating NUL, so 4095 bytes is the longest real path; one
		// more is within the wire limit and gets the kernel's own ENAMETOOLONG.
		const prefix = `${agent.workspace}/`
		const levels = Math.floor((4095 - prefix.length - 10) / 2)
		const directory = `${prefix}${'d/'.repeat(levels)}`.slice(0, -1)
		mkdirSync(directory, { recursive: true })
		const path = join(directory, 'f'.repeat(4095 - directory.length - 1))
		expect(Buffer.byteLength(path)).toBe(4095)
		writeFileSync(path, 'deep')
		expect(await first('read-file', { path })).toMatchObject({ ok: true, content: 'deep' })
		const written = await first('write-file', { path, content: 'deeper' })
		expect(written, JSON.stringify(written).slice(0, 300)).toMatchObject({ ok: true })
		expect(await first('read-file', { path })).toMatchObject({ ok: true, content: 'deeper' })
		const entries = await first('list-files', { path: directory })
		expect(entries.entries).toEqual([{ path, size: 6 }])
		const missing = await first('read-file', { path: `${path.slice(0, -1)}x` })
		expect(String(missing.error)).toMatch(/^ENOENT/)
		const kernelLimit = await first('read-file', { path: `${path}g` })
		expect(String(kernelLimit.error)).toMatch(/^ENAMETOOLONG/)
		expect(await first('healthz', {})).toMatchObject({ ok: true })
	})
})
