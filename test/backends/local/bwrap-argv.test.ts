import { describe, expect, it } from 'vitest'
import {
	type BwrapPlan,
	buildBwrapArgs,
	CGROUP_JOIN_SCRIPT,
	hiddenInsideSandbox,
	withCgroupJoin,
} from '../../../src/backends/local/bwrap-argv.js'

const PLAN: BwrapPlan = {
	workspace: '/tmp/namzu-sbx-a/workspace',
	homeDir: '/tmp/home',
	readOnlyBinds: ['/tmp/agent.cjs'],
	egress: 'deny-all',
	hostname: 'namzu-sandbox',
	command: ['/usr/bin/node', '/tmp/agent.cjs'],
}

function indexOfPair(args: readonly string[], flag: string, value: string): number {
	for (let i = 0; i < args.length - 1; i++) {
		if (args[i] === flag && args[i + 1] === value) return i
	}
	return -1
}

describe('buildBwrapArgs', () => {
	it('mounts the host read-only with fresh /dev, /proc and a private /tmp', () => {
		const args = buildBwrapArgs(PLAN)
		expect(args.slice(0, 9)).toEqual([
			'--ro-bind',
			'/',
			'/',
			'--dev',
			'/dev',
			'--proc',
			'/proc',
			'--tmpfs',
			'/tmp',
		])
	})

	it('binds the workspace and hidden programs after the /tmp tmpfs, at the same paths', () => {
		const args = buildBwrapArgs(PLAN)
		const tmpfs = indexOfPair(args, '--tmpfs', '/tmp')
		const workspace = args.indexOf('--bind')
		expect(args.slice(workspace, workspace + 3)).toEqual(['--bind', PLAN.workspace, PLAN.workspace])
		expect(workspace).toBeGreaterThan(tmpfs)
		expect(indexOfPair(args, '--ro-bind', '/tmp/agent.cjs')).toBeGreaterThan(tmpfs)
		expect(indexOfPair(args, '--dir', '/tmp/home')).toBeGreaterThan(tmpfs)
	})

	it('never mounts the agent control directory: the agent inherits its listening socket', () => {
		const args = buildBwrapArgs(PLAN)
		expect(args.filter((arg) => arg.includes('/control'))).toEqual([])
	})

	it('hides the host /run, where daemons keep their unix sockets, behind an empty tmpfs', () => {
		const args = buildBwrapArgs(PLAN)
		expect(indexOfPair(args, '--tmpfs', '/run')).toBeGreaterThan(-1)
		expect(hiddenInsideSandbox('/run/docker.sock')).toBe(true)
	})

	it.each([
		'--unshare-user',
		'--unshare-pid',
		'--unshare-ipc',
		'--unshare-uts',
		'--die-with-parent',
		'--new-session',
	])('always passes %s', (flag) => {
		expect(buildBwrapArgs(PLAN)).toContain(flag)
		expect(buildBwrapArgs({ ...PLAN, egress: 'allow-all' })).toContain(flag)
	})

	it('drops every capability and sets a hostname', () => {
		const args = buildBwrapArgs(PLAN)
		expect(indexOfPair(args, '--cap-drop', 'ALL')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--hostname', 'namzu-sandbox')).toBeGreaterThan(-1)
	})

	it.each(['deny-all', 'allow-all'] as const)(
		'under %s egress gives the sandbox its own network namespace',
		(egress) => {
			expect(buildBwrapArgs({ ...PLAN, egress }).includes('--unshare-net')).toBe(true)
		},
	)

	it('sizes /tmp, /run and a /dev/shm of its own when tmpfs sizes are planned', () => {
		const tmpfsSizes = { '/tmp': 8, '/var/tmp': 4, '/dev/shm': 2, '/run': 1 }
		const args = buildBwrapArgs({ ...PLAN, tmpfsSizes })
		for (const [mount, size] of [
			['/tmp', '8'],
			['/dev/shm', '2'],
			['/run', '1'],
		] as const) {
			const at = indexOfPair(args, '--tmpfs', mount)
			expect(args.slice(at - 2, at)).toEqual(['--size', size])
		}
		expect(indexOfPair(args, '--tmpfs', '/dev/shm')).toBeGreaterThan(
			indexOfPair(args, '--dev', '/dev'),
		)
	})

	it('keeps the cgroup namespace shared only when per-command groups are cgroup v2', () => {
		expect(buildBwrapArgs(PLAN)).toContain('--unshare-cgroup-try')
		expect(buildBwrapArgs({ ...PLAN, unshareCgroupNamespace: false })).not.toContain(
			'--unshare-cgroup-try',
		)
	})

	it('puts the network plumbing before the command', () => {
		const args = buildBwrapArgs({ ...PLAN, egress: 'allow-all', networkArgs: ['--info-fd', '6'] })
		expect(indexOfPair(args, '--info-fd', '6')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--info-fd', '6')).toBeLessThan(args.indexOf('--'))
	})

	it('ends with -- and the command', () => {
		const args = buildBwrapArgs(PLAN)
		expect(args.slice(-3)).toEqual(['--', ...PLAN.command])
	})
})

describe('hiddenInsideSandbox', () => {
	it.each([
		['/tmp/x/agent.cjs', true],
		['/tmp', true],
		['/dev/shm/x', true],
		['/work/main/dist/agent.cjs', false],
		['/tmpfoo/agent.cjs', false],
	])('%s ⇒ %s', (path, hidden) => {
		expect(hiddenInsideSandbox(path)).toBe(hidden)
	})
})

describe('withCgroupJoin', () => {
	it('runs the command directly when there is no cgroup to join', () => {
		expect(withCgroupJoin([], ['/usr/bin/bwrap', 'x'])).toEqual(['/usr/bin/bwrap', 'x'])
	})

	it('joins every procs file from a shell that then execs the command', () => {
		expect(withCgroupJoin(['/a/cgroup.procs', '/b/cgroup.procs'], ['/usr/bin/bwrap', 'x'])).toEqual(
			[
				'/bin/sh',
				'-c',
				CGROUP_JOIN_SCRIPT,
				'namzu-cgroup-join',
				'/a/cgroup.procs',
				'/b/cgroup.procs',
				'--',
				'/usr/bin/bwrap',
				'x',
			],
		)
	})
})
