/**
 * The retiring fence through a REAL unconfirmable cancellation, no test seam: the agent runs as
 * `nobody`, and the command starts a member of its own process group that has switched its real
 * uid to root (through a setuid-root copy of util-linux `setpriv`). The agent can SIGKILL the rest of
 * the group but not that member, so the group never empties and the cancel cannot be confirmed.
 * Needs root to build the setuid helper; skipped otherwise.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { openAgentStream } from '../agent-stream.js'
import { newExecutionId, reserve } from './execution-kit.js'

const NOBODY = 65534
const isRoot = process.getuid?.() === 0

/** Waits until `pid` runs `sleep` with real uid 0 (setpriv has done its work). */
async function untilRootSleep(pid: number): Promise<void> {
	for (let waited = 0; waited < 30_000; waited += 20) {
		const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
		const name = /^Name:\s+(\S+)/m.exec(status)?.[1]
		const realUid = /^Uid:\s+(\d+)/m.exec(status)?.[1]
		if (name === 'sleep' && realUid === '0') return
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
	throw new Error(`process ${pid} never became root's sleep`)
}

describe.skipIf(!isRoot)('the retiring fence after an unconfirmable cancellation', () => {
	let dir = ''
	let socketPath = ''
	let agent: ChildProcess | undefined
	let survivorPid: number | undefined

	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), 'namzu-fence-'))
		chmodSync(dir, 0o755)
		const helper = join(dir, 'setpriv')
		copyFileSync('/usr/bin/setpriv', helper)
		chmodSync(helper, 0o4755)
		const workspace = join(dir, 'workspace')
		const sockets = join(dir, 'sockets')
		for (const path of [workspace, sockets]) {
			mkdirSync(path)
			chownSync(path, NOBODY, NOBODY)
		}
		socketPath = join(sockets, 'agent.sock')
		const child = spawn(process.execPath, [agentBundlePath()], {
			uid: NOBODY,
			gid: NOBODY,
			env: {
				PATH: process.env.PATH ?? '/usr/bin:/bin',
				NAMZU_SANDBOX_WORKSPACE: workspace,
				NAMZU_AGENT_UNIX_PATH: socketPath,
				NAMZU_AGENT_CANCEL_GRACE_MS: '50',
				NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '400',
			},
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		agent = child
		await new Promise<void>((resolve, reject) => {
			let stdout = ''
			child.once('exit', (code) => reject(new Error(`agent exited with ${code}`)))
			child.stdout?.on('data', (chunk: Buffer) => {
				stdout += chunk.toString()
				if (stdout.includes('listening ')) resolve()
			})
		})
	})

	afterAll(async () => {
		if (survivorPid !== undefined) {
			try {
				process.kill(survivorPid, 'SIGKILL')
			} catch {
				// already gone
			}
		}
		if (agent && agent.exitCode === null && agent.signalCode === null) {
			const exited = new Promise((resolve) => agent?.once('exit', resolve))
			agent.kill('SIGKILL')
			await exited
		}
		if (dir !== '') rmSync(dir, { recursive: true, force: true })
	})

	it('answers cancellation_unconfirmed, then serves only healthz (ok:false, retiring:true) and cancel-execution', async () => {
		const address = { socketPath }
		const id = newExecutionId()
		await reserve(address, id)
		const helper = join(dir, 'setpriv')
		const run = openAgentStream(address, {
			op: 'execute',
			body: {
				executionId: id,
				command: 'sh',
				args: [
					'-c',
					`trap "" TERM; ${helper} --reuid=0 --regid=0 --clear-groups sleep 30 & echo "survivor $!"; wait`,
				],
			},
		})
		const line = await run.waitFor((event) => event.type === 'stdout_delta')
		survivorPid = Number(/survivor (\d+)/.exec(String(line.data))?.[1])
		expect(survivorPid).toBeGreaterThan(0)
		// `$!` is known at the fork; until setpriv has switched its real uid to root the agent can
		// still kill it, so the cancel is sent only once the survivor really is root's `sleep`.
		await untilRootSleep(survivorPid)

		const cancel = await rawRequest(address, { op: 'cancel-execution', body: { executionId: id } })
		expect(cancel.frames[0]).toMatchObject({ ok: false, error: 'cancellation_unconfirmed' })
		expect(String(cancel.frames[0]?.message)).toContain('NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS')
		expect(cancel.frames[0]?.guestBootId).toEqual(expect.any(String))

		const health = await rawRequest(address, { op: 'healthz' })
		expect(health.frames[0]).toMatchObject({ ok: false, protocolVersion: 2, retiring: true })

		for (const op of ['reserve-execution', 'read-file', 'write-file', 'list-files']) {
			const refused = await rawRequest(address, { op, body: { path: 'x', content: 'y' } })
			expect(refused.frames[0], op).toEqual({ ok: false, error: 'agent_retiring' })
		}
		const attach = await rawRequest(address, {
			op: 'attach-execution',
			body: { executionId: id },
		})
		expect(attach.frames).toEqual([{ type: 'error', error: 'agent_retiring' }])
		expect(attach.terminated).toBe(true)

		const served = await rawRequest(address, {
			op: 'cancel-execution',
			body: { executionId: newExecutionId() },
		})
		expect(served.frames[0]).toMatchObject({ ok: false, error: 'unknown_execution' })
		run.close()
	})
})
