/**
 * The local tier hands out the agent-backed sandbox, so `quiesce()` and `flush()` work there too.
 * Inside bubblewrap's pid namespace the agent is started by the namespace's init, so the quiesce
 * scans the whole namespace and reaches a program that left for a session of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { AgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()

let stateDir = ''
let removeState: () => Promise<void>
beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
})
afterAll(async () => {
	await removeState?.()
})

describe.skipIf(skip !== undefined)(
	`quiesce and flush on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it('quiesces the whole sandbox pid namespace, then flushes, and keeps serving', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			const sandbox = await provider.create()
			try {
				expect(sandbox).toBeInstanceOf(AgentSandbox)
				if (!(sandbox instanceof AgentSandbox)) throw new Error('not the host AgentSandbox')
				const box = sandbox
				await box.exec('/bin/sh', [
					'-c',
					"setsid /bin/sh -c 'while :; do echo x >> beat; sleep 0.05; done' >/dev/null 2>&1 </dev/null & exit 0",
				])
				const report = await box.quiesce({ graceMs: 200 })
				expect(report.scope).toBe('pid-namespace')
				expect(report.stopped.some((entry) => entry.command.includes('while :'))).toBe(true)
				expect(await box.quiesce()).toMatchObject({ rounds: 1, stopped: [] })
				const flushed = await box.flush()
				expect(flushed.workspace).toBe(box.rootDir)
				expect((await box.exec('/bin/echo', ['serving'])).stdout).toBe('serving\n')
			} finally {
				await sandbox.destroy()
				await provider.close()
			}
		})
	},
)
