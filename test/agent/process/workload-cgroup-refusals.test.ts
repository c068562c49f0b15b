/**
 * With workload cgroups configured a command never runs outside its groups: a group that cannot be
 * made, or a join that fails, refuses the command by name and leaves nothing behind; a bad
 * `NAMZU_AGENT_WORKLOAD_CGROUPS` refuses startup. A missing program is still the spawn error it is
 * without groups. Real agent, real cgroups (and, to make a join fail, a `cgroup.procs` that is
 * `/dev/full`).
 */
import {
	closeSync,
	constants,
	existsSync,
	mkdtempSync,
	openSync,
	readdirSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { pollUntil } from '../../../src/common/poll-until.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	makeThrowawayCgroups,
	stdioFrom,
	type ThrowawayCgroups,
	v1WorkloadCgroupsSkipReason,
} from '../../helpers/throwaway-cgroups.js'
import { lastFrame, rawRequest, runAgentToExit } from '../agent-test-kit.js'

const skip = v1WorkloadCgroupsSkipReason()
if (skip) console.warn(`workload-cgroup-refusals skipped: ${skip}`)

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

function scratchDir(): string {
	const dir = mkdtempSync(join(tmpdir(), 'namzu-cgroup-refusal-'))
	cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
	return dir
}

async function agentWith(fds: Record<number, number>, variable: string): Promise<StartedAgent> {
	const agent = await startAgent({
		env: { NAMZU_AGENT_WORKLOAD_CGROUPS: variable },
		extraStdio: stdioFrom(fds),
	})
	cleanups.push(() => agent.stop())
	return agent
}

async function groupedAgent(extraJoinDirs: readonly string[] = []) {
	const groups = makeThrowawayCgroups({ extraJoinDirs })
	cleanups.push(() => groups.remove())
	const agent = await startAgent({ env: groups.env, extraStdio: groups.extraStdio })
	groups.closeFds()
	cleanups.push(() => agent.stop())
	return { agent, groups }
}

/** A join-only "group" whose `cgroup.procs` takes no write. */
function unwritableGroup(): string {
	const dir = scratchDir()
	symlinkSync('/dev/full', join(dir, 'cgroup.procs'))
	return dir
}

function execute(agent: StartedAgent, body: object) {
	return rawRequest(agent, { op: 'execute', body })
}

async function request(agent: StartedAgent, op: string, body: object) {
	const exchange = await rawRequest(agent, { op, body })
	return exchange.frames
}

/** A command's group is removed right after its result went out (not before it). */
async function noGroupsLeft(groups: ThrowawayCgroups): Promise<void> {
	await pollUntil(() => groups.commandGroups().length === 0, performance.now() + 5_000)
	expect(groups.commandGroups(), 'command groups left behind').toEqual([])
}

describe.skipIf(skip !== undefined)('workload cgroup refusals', () => {
	it('refuses every kind of spawn with workload_cgroup_join_failed when a join fails, and runs nothing', async () => {
		const { agent, groups } = await groupedAgent([unwritableGroup()])
		const marker = join(agent.workspace, 'ran')
		const exec = await execute(agent, {
			command: '/bin/sh',
			args: ['-c', 'touch "$1"', 'sh', marker],
		})
		expect(lastFrame(exec)).toMatchObject({ type: 'error' })
		expect(String(lastFrame(exec)?.error)).toMatch(/^workload_cgroup_join_failed: /)
		const [detached] = await request(agent, 'start-detached', {
			sessionId: 'join-fails',
			command: '/bin/sh',
			args: ['-c', 'touch "$1"', 'sh', marker],
		})
		expect(detached).toMatchObject({ ok: false, error: 'workload_cgroup_join_failed' })
		const terminal = await request(agent, 'terminal', {
			cols: 80,
			rows: 24,
			command: '/bin/sh',
			args: ['-c', 'touch "$1"', 'sh', marker],
		})
		expect(terminal.at(-1)).toMatchObject({ type: 'error' })
		expect(String(terminal.at(-1)?.error)).toMatch(/^workload_cgroup_join_failed: /)
		expect(existsSync(marker), 'a refused command ran').toBe(false)
		const [sessions] = await request(agent, 'list-sessions', {})
		expect(sessions?.sessions, 'the refused session is not listed').toEqual([])
		await noGroupsLeft(groups)
	})

	it('refuses with workload_cgroup_unavailable when the command group cannot be made, leaving nothing', async () => {
		// A directory that is not a cgroup: mkdir works, but there is no cgroup.procs to join.
		const notCgroup = scratchDir()
		const fd = openSync(notCgroup, constants.O_RDONLY | constants.O_DIRECTORY)
		const agent = await agentWith({ 4: fd }, '[{"fd":4,"version":1,"perCommand":true}]')
		closeSync(fd)
		const marker = join(agent.workspace, 'ran')
		const exec = await execute(agent, {
			command: '/bin/sh',
			args: ['-c', 'touch "$1"', 'sh', marker],
		})
		expect(String(lastFrame(exec)?.error)).toMatch(/^workload_cgroup_unavailable: /)
		const [detached] = await request(agent, 'start-detached', {
			sessionId: 'unavailable',
			command: '/bin/true',
		})
		expect(detached).toMatchObject({ ok: false, error: 'workload_cgroup_unavailable' })
		const terminal = await request(agent, 'terminal', { cols: 80, rows: 24 })
		expect(terminal.at(-1)).toMatchObject({ type: 'error', error: 'workload_cgroup_unavailable' })
		const persistent = await request(agent, 'terminal', {
			cols: 80,
			rows: 24,
			sessionId: 'unavailable-pty',
			persistent: true,
		})
		expect(persistent.at(-1)).toMatchObject({ type: 'error', error: 'workload_cgroup_unavailable' })
		expect(existsSync(marker), 'a refused command ran').toBe(false)
		expect(readdirSync(notCgroup), 'half-made groups left behind').toEqual([])
		const [sessions] = await request(agent, 'list-sessions', {})
		expect(sessions?.sessions).toEqual([])
	})

	it('still reports a missing program as the spawn error it is without groups', async () => {
		const { agent, groups } = await groupedAgent()
		const exec = await execute(agent, { command: 'no-such-program-namzu' })
		expect(lastFrame(exec)).toMatchObject({ type: 'error' })
		expect(String(lastFrame(exec)?.error)).toContain('ENOENT')
		const absolute = await execute(agent, { command: '/nonexistent/program' })
		expect(String(lastFrame(absolute)?.error)).toContain('ENOENT')
		const plainFile = join(agent.workspace, 'plain.txt')
		writeFileSync(plainFile, 'echo ran\n', { mode: 0o644 })
		const notExecutable = await execute(agent, { command: plainFile })
		expect(String(lastFrame(notExecutable)?.error)).toContain('EACCES')
		const [detached] = await request(agent, 'start-detached', {
			sessionId: 'missing',
			command: '/nonexistent/program',
		})
		expect(detached).toMatchObject({ ok: false, error: 'spawn_failed' })
		expect(String(detached?.message)).toContain('ENOENT')
		// A program found on PATH runs under its own name, exactly as a direct spawn would.
		const found = await execute(agent, { command: 'sh', args: ['-c', 'printf "%s" "$0"'] })
		expect(lastFrame(found)).toMatchObject({ type: 'result', exitCode: 0 })
		await noGroupsLeft(groups)
	})
})

describe('NAMZU_AGENT_WORKLOAD_CGROUPS at startup', () => {
	const listen = () => ({
		NAMZU_AGENT_UNIX_PATH: join(scratchDir(), 'agent.sock'),
		NAMZU_SANDBOX_WORKSPACE: scratchDir(),
	})

	it.each([
		['not JSON', '{fd:4'],
		['not an array', '{"fd":4,"version":1,"perCommand":true}'],
		['a bad version', '[{"fd":4,"version":3,"perCommand":true}]'],
		['a stdio fd', '[{"fd":2,"version":1,"perCommand":true}]'],
		[
			'two perCommand groups',
			'[{"fd":4,"version":1,"perCommand":true},{"fd":5,"version":2,"perCommand":true}]',
		],
	])('refuses %s, naming the variable', async (_case, value) => {
		const exit = await runAgentToExit({ ...listen(), NAMZU_AGENT_WORKLOAD_CGROUPS: value })
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('NAMZU_AGENT_WORKLOAD_CGROUPS')
		expect(exit.stdout).not.toContain('listening')
	})

	it('refuses a descriptor that is not open, naming it', async () => {
		const exit = await runAgentToExit({
			...listen(),
			NAMZU_AGENT_WORKLOAD_CGROUPS: '[{"fd":9,"version":1,"perCommand":true}]',
		})
		expect(exit.code).toBe(1)
		expect(exit.stderr).toContain('fd 9')
		expect(exit.stdout).not.toContain('listening')
	})
})
