import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'

let agent: StartedAgent

beforeAll(async () => {
	agent = await startAgent()
})
afterAll(() => agent?.stop())

async function list(path: string): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, { op: 'list-files', body: { path } })
	const reply = exchange.frames[0]
	if (!reply) throw new Error('no reply to list-files')
	return reply
}

describe('list-files', () => {
	it('lists every regular file recursively with absolute paths and sizes', async () => {
		const root = join(agent.workspace, 'tree')
		mkdirSync(join(root, 'a', 'b'), { recursive: true })
		mkdirSync(join(root, 'empty'))
		writeFileSync(join(root, 'top.txt'), '12345')
		writeFileSync(join(root, 'a', 'b', 'deep.txt'), 'xy')
		expect(await list('tree')).toEqual({
			ok: true,
			entries: [
				{ path: join(root, 'a', 'b', 'deep.txt'), size: 2 },
				{ path: join(root, 'top.txt'), size: 5 },
			],
		})
	})

	it('answers a missing root with an empty listing', async () => {
		expect(await list('does/not/exist')).toEqual({ ok: true, entries: [] })
	})

	it('never follows (or lists) a symlink, even one to a directory inside the workspace', async () => {
		const root = join(agent.workspace, 'links')
		mkdirSync(join(root, 'real'), { recursive: true })
		writeFileSync(join(root, 'real', 'file.txt'), 'r')
		symlinkSync(join(root, 'real'), join(root, 'dir-link'))
		symlinkSync(join(root, 'real', 'file.txt'), join(root, 'file-link'))
		// A link out of the workspace must not leak the outside tree either.
		symlinkSync(agent.dir, join(root, 'outside-link'))
		expect(await list('links')).toEqual({
			ok: true,
			entries: [{ path: join(root, 'real', 'file.txt'), size: 1 }],
		})
	})

	it('refuses a root that escapes the workspace, lexically or through a symlink', async () => {
		symlinkSync(agent.dir, join(agent.workspace, 'escape'))
		expect(await list('..')).toMatchObject({ ok: false, error: 'path_escapes_workspace' })
		expect(await list('escape')).toMatchObject({ ok: false, error: 'path_escapes_workspace' })
		expect(await list('/etc')).toMatchObject({ ok: false, error: 'path_escapes_workspace' })
	})

	it('shows a .namzu-write-….part sibling as an ordinary file (writes in progress are visible)', async () => {
		const root = join(agent.workspace, 'pending')
		mkdirSync(root)
		const temp = '.namzu-write-x.txt.11111111-2222-4333-8444-555555555555.part'
		writeFileSync(join(root, temp), 'abc')
		expect(await list('pending')).toEqual({
			ok: true,
			entries: [{ path: join(root, temp), size: 3 }],
		})
	})
})
