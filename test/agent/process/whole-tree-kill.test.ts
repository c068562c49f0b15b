/**
 * Abort means the whole tree: the real agent handed real cgroups (`NAMZU_AGENT_WORKLOAD_CGROUPS`,
 * throwaway groups under this process's own), driven through the real host `AgentSandbox`. Every
 * attack — a `setsid` or double-forked descendant, a fork bomb — sits beside its positive control
 * (a server started with `&` by a command that exits keeps serving).
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { pollUntil } from '../../../src/common/poll-until.js'
import type { Sandbox, SandboxExecResult, TerminalSession } from '../../../src/contract/sandbox.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	makeThrowawayCgroups,
	markerSleep,
	processesWithMarker,
	type ThrowawayCgroups,
	v1WorkloadCgroupsSkipReason,
	v2WorkloadCgroupSkipReason,
} from '../../helpers/throwaway-cgroups.js'
import { delay, exitOf } from '../agent-test-kit.js'

const v1Skip = v1WorkloadCgroupsSkipReason()
const v2Skip = v2WorkloadCgroupSkipReason()
if (v1Skip) console.warn(`whole-tree-kill (v1 freezer + pids) skipped: ${v1Skip}`)
if (v2Skip) console.warn(`whole-tree-kill (v2 cgroup.kill) skipped: ${v2Skip}`)

const TERMINAL_SIZE = { cols: 80, rows: 24 } as const

interface Rig {
	readonly agent: StartedAgent
	readonly groups: ThrowawayCgroups | undefined
	readonly sandbox: Sandbox & Required<Pick<Sandbox, 'openTerminal'>>
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function rig(options: { version?: 1 | 2; pidsMax?: number; grouped?: boolean } = {}) {
	const groups =
		options.grouped === false
			? undefined
			: makeThrowawayCgroups({
					...(options.version === undefined ? {} : { version: options.version }),
					...(options.pidsMax === undefined ? {} : { pidsMax: options.pidsMax }),
				})
	if (groups) cleanups.push(() => groups.remove())
	const agent = await startAgent({
		env: { NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '5000', ...(groups?.env ?? {}) },
		...(groups ? { extraStdio: groups.extraStdio } : {}),
	})
	groups?.closeFds()
	cleanups.push(() => agent.stop())
	const sandbox = createAgentSandbox({
		id: `tree-${randomUUID().slice(0, 8)}`,
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => {},
	})
	cleanups.push(() => sandbox.destroy())
	return { agent, groups, sandbox } as Rig
}

/**
 * Gives a command's group removal, which follows its result, a bounded time to reach `count`
 * groups; the assertion after it says what was expected.
 */
async function groupsSettle(groups: { commandGroups(): string[] } | undefined, count: number) {
	await pollUntil(() => groups?.commandGroups().length === count, performance.now() + 5_000)
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!condition()) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await delay(10)
	}
}

/**
 * A command whose `setsid` child and double-forked daemon-style grandchild (reparented, in a
 * session of its own) both leave its process group and kernel session.
 */
function escapingScript(marker: string): string {
	return [
		`setsid sh -c 'sleep ${marker}' &`,
		`(setsid sleep ${marker} &)`,
		'echo started',
		`sleep ${marker}`,
	].join('\n')
}

/** Sleeps carrying `marker` that are not inside a shell's command line: the escapees themselves. */
function sleepers(marker: string): number[] {
	return processesWithMarker(marker).filter((pid) => {
		const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
		return cmdline[0] === 'sleep'
	})
}

const O_CLOEXEC = 0o2000000

function isCloseOnExec(pid: number, fd: string): boolean {
	const flags = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))
	return (Number.parseInt(flags?.[1] ?? '0', 8) & O_CLOEXEC) !== 0
}

/** Descriptors of `pid` a child would inherit (not close-on-exec). */
function inheritableFds(pid: number): number[] {
	return readdirSync(`/proc/${pid}/fd`)
		.filter((fd) => {
			try {
				return !isCloseOnExec(pid, fd)
			} catch {
				return false
			}
		})
		.map(Number)
}

/**
 * Runs `command args` with an abort signal, waits until it printed `started` and `ready()` holds,
 * aborts, and answers how the exec settled.
 */
async function abortOnceReady(
	sandbox: Sandbox,
	command: string,
	args: readonly string[],
	ready: () => boolean,
	timeoutMs = 5000,
): Promise<{ result: SandboxExecResult } | { error: unknown }> {
	const controller = new AbortController()
	let started = false
	const settled = sandbox
		.exec(command, args, {
			signal: controller.signal,
			onOutput: (chunk) => {
				if (chunk.data.includes('started')) started = true
			},
		})
		.then(
			(result) => ({ result }),
			(error: unknown) => ({ error }),
		)
	await waitUntil(() => started && ready(), timeoutMs)
	controller.abort()
	return settled
}

async function waitForOutput(session: TerminalSession, text: string): Promise<void> {
	let seen = ''
	session.onData((chunk) => {
		seen += chunk
	})
	await waitUntil(() => seen.includes(text))
}

/** Stops the agent the way a tier destroys a sandbox: SIGTERM, then its bounded drain. */
async function terminateAgent(agent: StartedAgent): Promise<void> {
	const exited = exitOf(agent.process)
	agent.process.kill('SIGTERM')
	await exited
}

describe.skipIf(v1Skip !== undefined)('whole-tree kill with v1 freezer + pids groups', () => {
	it('abort ends the command, its setsid child and its double-forked grandchild', async () => {
		const { sandbox, groups } = await rig()
		const marker = markerSleep()
		const outcome = await abortOnceReady(
			sandbox,
			'/bin/sh',
			['-c', escapingScript(marker)],
			() => sleepers(marker).length === 3,
		)
		if ('result' in outcome) expect(outcome.result.exitCode).not.toBe(0)
		expect(processesWithMarker(marker), 'processes left after the abort').toEqual([])
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups(), 'command groups left after the abort').toEqual([])
	})

	it('a timeout ends the whole tree likewise', async () => {
		const { sandbox, groups } = await rig()
		const marker = markerSleep()
		const result = await sandbox.exec('/bin/sh', ['-c', escapingScript(marker)], { timeout: 400 })
		expect(result.timedOut).toBe(true)
		expect(processesWithMarker(marker), 'processes left after the timeout').toEqual([])
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups()).toEqual([])
	})

	it('a terminal kill ends every process the terminal started, setsid ones included', async () => {
		const { sandbox, groups } = await rig()
		const marker = markerSleep()
		const terminal = await sandbox.openTerminal({
			command: '/bin/sh',
			args: ['-c', `setsid sh -c 'sleep ${marker}' & echo term-ready; exec sleep ${marker}`],
			size: TERMINAL_SIZE,
		})
		await waitForOutput(terminal, 'term-ready')
		await waitUntil(() => sleepers(marker).length === 2)
		terminal.kill('SIGKILL')
		await terminal.exited
		expect(processesWithMarker(marker), 'processes left after the terminal kill').toEqual([])
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups()).toEqual([])
	})

	it('a session kill ends a detached session and a persistent terminal as whole trees', async () => {
		const { sandbox, groups } = await rig()
		const agentSandbox = sandbox as unknown as {
			startDetached(options: object): Promise<unknown>
			killSession(id: string): Promise<unknown>
			openTerminal(options: object): Promise<TerminalSession>
		}
		const detached = markerSleep()
		await agentSandbox.startDetached({
			sessionId: 'tree-detached',
			command: '/bin/sh',
			args: ['-c', `setsid sh -c 'sleep ${detached}' & sleep ${detached}`],
		})
		const persistent = markerSleep()
		const terminal = await agentSandbox.openTerminal({
			sessionId: 'tree-terminal',
			persistent: true,
			command: '/bin/sh',
			args: [
				'-c',
				`setsid sh -c 'sleep ${persistent}' & echo term-ready; exec sleep ${persistent}`,
			],
			size: TERMINAL_SIZE,
		})
		await waitForOutput(terminal, 'term-ready')
		await waitUntil(() => sleepers(detached).length === 2 && sleepers(persistent).length === 2)
		await agentSandbox.killSession('tree-detached')
		expect(processesWithMarker(detached), 'left by the detached session').toEqual([])
		await agentSandbox.killSession('tree-terminal')
		expect(processesWithMarker(persistent), 'left by the persistent terminal').toEqual([])
		await waitUntil(() => groups?.commandGroups().length === 0)
	})

	it('a command that exits keeps what it started in the background, until the agent stops', async () => {
		const { sandbox, agent, groups } = await rig()
		const marker = markerSleep()
		// Positive control: a server started with & by a command that exits goes on serving.
		const server = [
			"const net = require('net')",
			"const s = net.createServer((c) => c.end('served\\n'))",
			"s.listen(0, '127.0.0.1', () => require('fs').writeFileSync(process.argv[1], String(s.address().port)))",
		].join('\n')
		const portFile = `${agent.workspace}/port`
		const started = await sandbox.exec('/bin/sh', [
			'-c',
			`nohup sleep ${marker} >/dev/null 2>&1 &
nohup node -e "$1" "$2" >/dev/null 2>&1 &`,
			'sh',
			server,
			portFile,
		])
		expect(started.exitCode).toBe(0)
		await waitUntil(() => {
			try {
				return readFileSync(portFile, 'utf8') !== ''
			} catch {
				return false
			}
		})
		const port = readFileSync(portFile, 'utf8')
		const client = await sandbox.exec('node', [
			'-e',
			"require('net').connect(Number(process.argv[1]), '127.0.0.1').pipe(process.stdout)",
			port,
		])
		expect(client.stdout, 'the background server answered').toBe('served\n')
		expect(sleepers(marker), 'the background sleep outlived its command').toHaveLength(1)
		await groupsSettle(groups, 1)
		expect(groups?.commandGroups(), 'only the group still holding them').toHaveLength(1)
		await terminateAgent(agent)
		expect(processesWithMarker(marker), 'left after the agent stopped').toEqual([])
		expect(groups?.commandGroups(), 'groups left after the agent stopped').toEqual([])
	})

	it('a quiesce reaches what a finished command left in a session of its own', async () => {
		const { sandbox, groups } = await rig()
		const marker = markerSleep()
		const left = await sandbox.exec('/bin/sh', ['-c', `setsid sleep ${marker} >/dev/null 2>&1 &`])
		expect(left.exitCode).toBe(0)
		await waitUntil(() => sleepers(marker).length === 1)
		// The agent is no ancestor of it and never registered its session: only its cgroup says so.
		const report = await (sandbox as unknown as { quiesce(): Promise<{ scope: string }> }).quiesce()
		expect(report.scope).toBe('owned-sessions')
		expect(processesWithMarker(marker), 'left after the quiesce').toEqual([])
		expect((await sandbox.exec('true')).exitCode, 'the agent still serves').toBe(0)
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups()).toEqual([])
	})

	it('removes a group right after its result went out, and one left populated once it empties', async () => {
		const { sandbox, groups } = await rig()
		for (let i = 0; i < 5; i++) {
			expect((await sandbox.exec('true')).exitCode).toBe(0)
			await groupsSettle(groups, 0)
			expect(groups?.commandGroups(), `groups after exec ${i}`).toEqual([])
		}
		const marker = markerSleep().replace(/^1000\./, '0.8')
		const background = await sandbox.exec('/bin/sh', ['-c', `sleep ${marker} >/dev/null 2>&1 &`])
		expect(background.exitCode).toBe(0)
		await groupsSettle(groups, 1)
		expect(groups?.commandGroups(), 'the group of the background sleep').toHaveLength(1)
		await waitUntil(() => sleepers(marker).length === 0, 10_000)
		expect((await sandbox.exec('true')).exitCode).toBe(0)
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups(), 'reaped at the next command').toEqual([])
	})

	it('hands a command none of its cgroup descriptors, and keeps its own close-on-exec', async () => {
		const { sandbox, agent, groups } = await rig()
		const marker = markerSleep()
		const controller = new AbortController()
		const running = sandbox
			.exec('sleep', [marker], { signal: controller.signal })
			.catch(() => undefined)
		await waitUntil(() => sleepers(marker).length === 1)
		const [command] = sleepers(marker)
		const commandFds = readdirSync(`/proc/${command}/fd`).map(Number)
		controller.abort()
		await running
		// Whatever this test process leaks to every child (the harness's own descriptors) aside.
		const leakedByTheHarness = new Set(inheritableFds(process.pid))
		expect(
			commandFds.filter((fd) => fd > 2 && !leakedByTheHarness.has(fd)),
			'descriptors past stdio in the command',
		).toEqual([])
		const dirs = groups?.entries.map((entry) => entry.dir) ?? []
		const pid = agent.process.pid ?? 0
		const held = readdirSync(`/proc/${pid}/fd`).filter((fd) => {
			try {
				return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('/sys/fs/cgroup')
			} catch {
				return false
			}
		})
		// One descriptor per directory: each inherited original was closed once re-opened.
		expect(held.map((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`)).sort()).toEqual([...dirs].sort())
		for (const fd of held) expect(isCloseOnExec(pid, fd), `fd ${fd} close-on-exec`).toBe(true)
	})

	it('bounds a fork bomb by pids.max and still ends all of it on abort', async () => {
		const pidsMax = 40
		const { sandbox, groups } = await rig({ pidsMax })
		const marker = markerSleep()
		// bash retries a failed fork, so this bomb keeps the group at its limit until it is killed.
		const bomb = `# ${marker}\necho started\nb() { b & b & wait; }\nb`
		const pidsDir = groups?.pidsDir ?? ''
		const events = () => readFileSync(`${pidsDir}/pids.events`, 'utf8')
		const current = () => Number(readFileSync(`${pidsDir}/pids.current`, 'utf8'))
		const counts: number[] = []
		await abortOnceReady(
			sandbox,
			'/bin/bash',
			['-c', bomb],
			() => {
				// Refused forks, then a group held at its limit for a while: bounded, and still trying.
				if (!/^max [1-9]/m.test(events())) return false
				counts.push(current())
				return counts.length >= 20
			},
			10_000,
		)
		expect(Math.max(...counts), 'processes in the workload group').toBeLessThanOrEqual(pidsMax)
		expect(Math.min(...counts), 'the bomb holds the group near its limit').toBeGreaterThan(
			pidsMax / 2,
		)
		expect(processesWithMarker(marker), 'bomb processes left after the abort').toEqual([])
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups()).toEqual([])
	}, 30_000)
})

describe.skipIf(v2Skip !== undefined)('whole-tree kill with a v2 group (cgroup.kill)', () => {
	it('abort ends a setsid child and a double-forked grandchild', async () => {
		const { sandbox, groups } = await rig({ version: 2 })
		const marker = markerSleep()
		await abortOnceReady(
			sandbox,
			'/bin/sh',
			['-c', escapingScript(marker)],
			() => sleepers(marker).length === 3,
		)
		expect(processesWithMarker(marker)).toEqual([])
		await groupsSettle(groups, 0)
		expect(groups?.commandGroups()).toEqual([])
	})
})

describe('without workload cgroups', () => {
	it('behaves as before: the process group is killed and a setsid child is out of its reach', async () => {
		const { sandbox } = await rig({ grouped: false })
		const marker = markerSleep()
		await abortOnceReady(
			sandbox,
			'/bin/sh',
			['-c', escapingScript(marker)],
			() => sleepers(marker).length === 3,
		)
		const left = sleepers(marker)
		try {
			// The leader's own sleep is gone; the two that left its session are what cgroups are for.
			expect(left).toHaveLength(2)
		} finally {
			for (const pid of left) process.kill(pid, 'SIGKILL')
		}
	})
})
