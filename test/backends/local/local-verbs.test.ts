import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandbox,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { destroyLocalSandbox } from '../../../src/backends/machine/index.js'
import { ExecutionDetachedError } from '../../../src/host/exec/exec-errors.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()

let stateDir = ''
let removeState: () => Promise<void>
let provider: LocalSandboxProvider | undefined
let sandbox: LocalSandbox | undefined

function box(): LocalSandbox {
	if (!sandbox) throw new Error('no sandbox')
	return sandbox
}

async function reopened(): Promise<LocalSandbox> {
	if (!provider) throw new Error('no provider')
	return provider.open(box().id)
}

beforeAll(async () => {
	if (skip) return
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
	provider = createLocalSandboxProvider({ tier: 'process', stateDir })
	sandbox = await provider.create({ keepAlive: true, keepAliveMs: 120_000 })
})
afterAll(async () => {
	if (sandbox) await destroyLocalSandbox(sandbox.id, { stateDir }).catch(() => undefined)
	await provider?.close()
	await removeState?.()
})

describe.skipIf(skip !== undefined)(
	`the local tier's issue-3 verbs${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it('a detached exec keeps running after its watcher lets go and a reopened handle attaches to the same result', async () => {
			const stop = new AbortController()
			let executionId: string | undefined
			const running = box().exec('sh', ['-c', 'echo begin; sleep 0.5; echo end; exit 5'], {
				detach: true,
				detachSignal: stop.signal,
				onOutput: ({ data }) => {
					if (data.includes('begin')) stop.abort()
				},
				onExecutionId: (id) => {
					executionId = id
				},
			})
			await expect(running).rejects.toBeInstanceOf(ExecutionDetachedError)
			if (!executionId) throw new Error('no execution id')
			const other = await reopened()
			const result = await other.attachExecution(executionId, { fromOffset: 0 })
			expect(result).toMatchObject({ exitCode: 5, stdout: 'begin\nend\n' })
		})

		it('cancelExecution from a reopened handle stops a detached command', async () => {
			const stop = new AbortController()
			let executionId: string | undefined
			const running = box().exec('sh', ['-c', 'echo up; sleep 30'], {
				detach: true,
				detachSignal: stop.signal,
				onOutput: () => stop.abort(),
				onExecutionId: (id) => {
					executionId = id
				},
			})
			await expect(running).rejects.toBeInstanceOf(ExecutionDetachedError)
			if (!executionId) throw new Error('no execution id')
			const other = await reopened()
			const ack = await other.cancelExecution(executionId)
			expect(ack.started).toBe(true)
			const result = await other.attachExecution(executionId)
			expect(result.aborted).toBe(true)
		})

		it('startDetached, readSession, listSessions and killSession work across handles', async () => {
			await box().startDetached({
				sessionId: 'job-1',
				command: 'sh',
				args: ['-c', 'echo job-output; sleep 30'],
			})
			const other = await reopened()
			let read = await other.readSession('job-1')
			for (let i = 0; i < 50 && !read.chunk.includes('job-output'); i++) {
				await new Promise((resolve) => setTimeout(resolve, 20))
				read = await other.readSession('job-1')
			}
			expect(read).toMatchObject({ chunk: 'job-output\n', status: 'running' })
			expect((await other.listSessions()).map((s) => s.sessionId)).toContain('job-1')
			const killed = await other.killSession('job-1', { signal: 'SIGKILL' })
			expect(killed.signalled).toBeGreaterThan(0)
		})

		it('a persistent terminal opened by one handle is re-attached by another with its replay', async () => {
			const terminal = await box().openTerminal({
				command: '/bin/sh',
				size: { cols: 80, rows: 24 },
				sessionId: 'term-1',
				persistent: true,
			})
			let seen = ''
			terminal.onData((chunk) => {
				seen += chunk
			})
			terminal.write('echo persistent-$((40+2))\n')
			for (let i = 0; i < 100 && !seen.includes('persistent-42'); i++) {
				await new Promise((resolve) => setTimeout(resolve, 20))
			}
			await terminal.detach()
			const other = await reopened()
			const again = await other.attachTerminal('term-1', {
				fromOffset: 0,
				size: { cols: 100, rows: 30 },
			})
			let replay = ''
			again.onData((chunk) => {
				replay += chunk
			})
			for (let i = 0; i < 100 && !replay.includes('persistent-42'); i++) {
				await new Promise((resolve) => setTimeout(resolve, 20))
			}
			expect(replay).toContain('persistent-42')
			again.write('exit 4\n')
			expect((await again.exited).exitCode).toBe(4)
		})

		it('quiesce stops guest processes and flush syncs the workspace, and the sandbox keeps serving', async () => {
			const background = box().exec('sleep', ['30'])
			await new Promise((resolve) => setTimeout(resolve, 200))
			const report = await box().quiesce({ graceMs: 100 })
			expect(report.stopped.length).toBeGreaterThan(0)
			const ended = await background
			expect(ended.exitCode).not.toBe(0)
			const flushed = await box().flush()
			expect(flushed.workspace).toBe(box().rootDir)
			expect((await box().exec('echo', ['after'])).stdout).toBe('after\n')
		})
	},
)
