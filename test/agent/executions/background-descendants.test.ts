/**
 * `exec` ends when the command's own process exits, whatever it left in the background holding
 * its stdout/stderr: the real agent (with real v1 / v2 per-command cgroups, and without any),
 * driven through the real host `AgentSandbox`. The attack (a descendant that never closes the
 * pipes) sits beside its positive control (the server it started goes on serving), and the
 * opt-out (`keepDescendants: false`) beside both.
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { SandboxExecOptions } from '../../../src/contract/sandbox.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { startAgent } from '../../helpers/agent-process.js'
import {
	makeThrowawayCgroups,
	markerSleep,
	processesWithMarker,
	v1WorkloadCgroupsSkipReason,
	v2WorkloadCgroupSkipReason,
} from '../../helpers/throwaway-cgroups.js'
import { delay } from '../agent-test-kit.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Without cgroups nothing reaps what a test left running: kill it by its command line. */
function killMarked(marker: string): void {
	cleanups.push(async () => {
		for (const pid of processesWithMarker(marker)) {
			try {
				process.kill(pid, 'SIGKILL')
			} catch {
				// Already gone.
			}
		}
	})
}

type Grouping = 'v1' | 'v2' | 'none'

const groupings: { grouping: Grouping; skip: string | undefined }[] = [
	{ grouping: 'v1', skip: v1WorkloadCgroupsSkipReason() },
	{ grouping: 'v2', skip: v2WorkloadCgroupSkipReason() },
	{ grouping: 'none', skip: undefined },
]

async function rig(grouping: Grouping) {
	const groups =
		grouping === 'none' ? undefined : makeThrowawayCgroups({ version: grouping === 'v1' ? 1 : 2 })
	if (groups) cleanups.push(() => groups.remove())
	const agent = await startAgent({
		env: { NAMZU_SANDBOX_MAX_TIMEOUT_MS: '600000', ...(groups?.env ?? {}) },
		...(groups ? { extraStdio: groups.extraStdio } : {}),
	})
	groups?.closeFds()
	cleanups.push(() => agent.stop())
	const sandbox = createAgentSandbox({
		id: `bg-${randomUUID().slice(0, 8)}`,
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => {},
	})
	cleanups.push(() => sandbox.destroy())
	return { sandbox, groups }
}

function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer()
		server.once('error', reject)
		server.listen(0, '127.0.0.1', () => {
			const address = server.address()
			const port = typeof address === 'object' && address ? address.port : 0
			server.close(() => resolve(port))
		})
	})
}

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!condition()) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await delay(20)
	}
}

/** Fetches `/` from the port inside the sandbox, retrying until the server listens. */
const FETCH = [
	'import sys, time, urllib.request',
	'for attempt in range(200):',
	'    try:',
	"        print(urllib.request.urlopen('http://127.0.0.1:' + sys.argv[1] + '/').status); break",
	'    except OSError:',
	'        time.sleep(0.05)',
].join('\n')

/** A long timeout: a call that waited for the pipes to close would report `timedOut: true`. */
const LONG: SandboxExecOptions = { timeout: 300_000 }

describe.each(groupings)('background descendants ($grouping cgroups)', ({ grouping, skip }) => {
	it.skipIf(skip !== undefined)(
		"returns at the command's exit while `python3 -m http.server &` holds its output, and the server keeps serving",
		async () => {
			const { sandbox } = await rig(grouping)
			const port = await freePort()
			killMarked(`http.server ${port}`)
			const started = await sandbox.exec(
				'sh',
				['-c', `echo before; python3 -m http.server ${port} --bind 127.0.0.1 &`],
				LONG,
			)
			expect(started).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'before\n' })
			// The server logs every request to the stderr it inherited: it must survive that.
			for (let request = 0; request < 2; request++) {
				const fetched = await sandbox.exec('python3', ['-c', FETCH, String(port)], LONG)
				expect(fetched.stdout, `request ${request}`).toBe('200\n')
			}
		},
	)

	it.skipIf(skip !== undefined)(
		'keeps the output written before the exit, and ends the call at the exit though a descendant writes on',
		async () => {
			const { sandbox } = await rig(grouping)
			const marker = markerSleep().replace(/^1000\./, '0.0')
			killMarked(marker)
			const result = await sandbox.exec(
				'sh',
				[
					'-c',
					`(for i in $(seq 60); do echo tick; sleep ${marker}5; done) & echo done; echo err >&2`,
				],
				LONG,
			)
			expect(result.exitCode).toBe(0)
			expect(result.timedOut).toBe(false)
			expect(result.stdout).toContain('done\n')
			expect(result.stderr).toBe('err\n')
			// Later output is dropped: the next call's result is its own.
			expect((await sandbox.exec('echo', ['next'], LONG)).stdout).toBe('next\n')
		},
	)

	it.skipIf(skip !== undefined)(
		'keepDescendants: false ends what the command left behind the moment it exits',
		async () => {
			const { sandbox, groups } = await rig(grouping)
			const marker = markerSleep()
			killMarked(marker)
			const result = await sandbox.exec('sh', ['-c', `sleep ${marker} & echo left`], {
				...LONG,
				keepDescendants: false,
			})
			expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: 'left\n' })
			expect(processesWithMarker(marker), 'left after the call returned').toEqual([])
			if (groups) await waitUntil(() => groups.commandGroups().length === 0)
			// Positive control: by default the same descendant runs on until the agent stops.
			const kept = markerSleep()
			killMarked(kept)
			expect((await sandbox.exec('sh', ['-c', `sleep ${kept} & echo left`], LONG)).stdout).toBe(
				'left\n',
			)
			expect(processesWithMarker(kept), 'kept by default').toHaveLength(1)
		},
	)
})
