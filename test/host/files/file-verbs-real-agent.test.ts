/**
 * The file verbs and watch of `AgentSandbox` against the real agent process: arguments refused by
 * name before dialing, a jail root never removed, a cursor the guest cannot resume starting with
 * `overflow`, and a watch that never makes the sandbox busy. (The behaviour every tier shares is in
 * the conformance suite: `src/testing/conformance-file-verb-cases.ts`, `conformance-watch-cases.ts`.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxArgumentError, SandboxFileError } from '../../../src/contract/errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

let agent: StartedAgent
let sandbox: AgentSandbox

beforeAll(async () => {
	agent = await startAgent()
	sandbox = createAgentSandbox({
		id: 'file-verbs',
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => {},
	})
})
afterAll(async () => {
	await sandbox?.destroy()
	await agent?.stop()
})

async function rejection(call: () => Promise<unknown>): Promise<unknown> {
	return call().then(
		() => undefined,
		(error: unknown) => error,
	)
}

describe('file verbs against the real agent', () => {
	it.each([
		['listDirectory', 'options.limit', () => sandbox.listDirectory('.', { limit: 0 })],
		['listDirectory', 'options.limit', () => sandbox.listDirectory('.', { limit: 5001 })],
		['remove', 'options.recursive', () => sandbox.remove('x', { recursive: 'yes' as never })],
		['rename', 'to', () => sandbox.rename('x', '')],
		['stat', 'path', () => sandbox.stat(42 as never)],
	])('%s refuses a bad %s by name before dialing', async (method, parameter, call) => {
		const error = await rejection(call)
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect(error).toMatchObject({ method, parameter })
	})

	it('never removes or renames the workspace root itself', async () => {
		for (const call of [
			() => sandbox.remove('.', { recursive: true }),
			() => sandbox.rename(agent.workspace, 'elsewhere'),
		]) {
			const error = await rejection(call)
			expect(error).toBeInstanceOf(SandboxFileError)
			expect(error).toMatchObject({ code: 'path_is_jail_root' })
		}
		expect((await sandbox.stat('.')).type).toBe('directory')
	})

	it('starts a watch whose cursor cannot be resumed with overflow, and stays ready meanwhile', async () => {
		await sandbox.mkdir('watched')
		const controller = new AbortController()
		const watch = sandbox.watch('watched', { cursor: '0123456789ab.7', signal: controller.signal })
		const iterator = watch[Symbol.asyncIterator]()
		const first = await iterator.next()
		expect(first.value).toMatchObject({ type: 'overflow' })
		expect(sandbox.status).toBe('ready')
		controller.abort()
		expect((await iterator.next()).done).toBe(true)
	})

	it('pages a directory of 12 entries by 5 with guest paths relative to the workspace', async () => {
		for (let index = 0; index < 12; index += 1) {
			await sandbox.writeFile(`paged/f${String(index).padStart(2, '0')}`, 'x')
		}
		const first = await sandbox.listDirectory('paged', { limit: 5 })
		expect(first.entries.map((entry) => entry.path)).toEqual([
			'paged/f00',
			'paged/f01',
			'paged/f02',
			'paged/f03',
			'paged/f04',
		])
		const second = await sandbox.listDirectory('paged', { limit: 5, cursor: first.nextCursor })
		const third = await sandbox.listDirectory('paged', { limit: 5, cursor: second.nextCursor })
		expect(third.entries.map((entry) => entry.name)).toEqual(['f10', 'f11'])
		expect(third.nextCursor).toBeUndefined()
	})
})
