import { describe, expect, it } from 'vitest'
import { type BwrapPlan, buildBwrapArgs } from '../../../src/backends/local/bwrap-argv.js'
import {
	AGENT_BUNDLE_PATH,
	AGENT_NODE_PATH,
	type HostRootLayout,
	planSandboxRoot,
	type SandboxRootInput,
	underSystemBinds,
	visibleAtSamePath,
} from '../../../src/backends/local/sandbox-root.js'
import {
	CGROUP_JOIN_SCRIPT,
	withCgroupJoin,
} from '../../../src/backends/machine/cgroups/cgroup-join.js'

const MERGED_USR: HostRootLayout = {
	systemEntries: [
		{ path: '/bin', kind: 'symlink', target: 'usr/bin' },
		{ path: '/lib', kind: 'symlink', target: 'usr/lib' },
		{ path: '/lib64', kind: 'symlink', target: 'usr/lib64' },
	],
	etcSecrets: [
		{ path: '/etc/shadow', kind: 'file' },
		{ path: '/etc/ssl/private', kind: 'dir' },
	],
	sysCpu: true,
}

const INPUT: SandboxRootInput = {
	layout: MERGED_USR,
	workspace: { source: '/tmp/namzu-sbx-a/workspace', target: '/tmp/namzu-sbx-a/workspace' },
	homeDir: '/tmp/home',
	runtime: {
		agentNode: '/tmp/namzu-runtime/node-1',
		agentBundle: '/tmp/namzu-runtime/agent-1.cjs',
		emptyFile: '/tmp/namzu-runtime/empty',
	},
	readOnly: [{ source: '/root/.nvm', target: '/root/.nvm' }],
	hidden: [
		{ path: '/root/.nvm/secret', kind: 'file' },
		{ path: '/srv/not-bound', kind: 'dir' },
	],
}

const ROOT = planSandboxRoot(INPUT)

const PLAN: BwrapPlan = {
	root: ROOT.mounts,
	egress: 'deny-all',
	hostname: 'namzu-sandbox',
	command: [AGENT_NODE_PATH, AGENT_BUNDLE_PATH],
}

function indexOfPair(args: readonly string[], flag: string, value: string): number {
	for (let i = 0; i < args.length - 1; i++) {
		if (args[i] === flag && args[i + 1] === value) return i
	}
	return -1
}

function indexOfTriple(args: readonly string[], flag: string, a: string, b: string): number {
	for (let i = 0; i < args.length - 2; i++) {
		if (args[i] === flag && args[i + 1] === a && args[i + 2] === b) return i
	}
	return -1
}

describe('planSandboxRoot', () => {
	const args = buildBwrapArgs(PLAN)

	it('starts from an empty tmpfs root and binds /usr and /etc read-only, never the host root', () => {
		expect(args.slice(0, 5)).toEqual(['--tmpfs', '/', '--ro-bind', '/usr', '/usr'])
		expect(indexOfTriple(args, '--ro-bind', '/etc', '/etc')).toBeGreaterThan(-1)
		expect(indexOfTriple(args, '--ro-bind', '/', '/')).toBe(-1)
	})

	it('recreates merged-/usr symlinks and binds real system directories', () => {
		expect(indexOfTriple(args, '--symlink', 'usr/bin', '/bin')).toBeGreaterThan(-1)
		const split = planSandboxRoot({
			...INPUT,
			layout: { ...MERGED_USR, systemEntries: [{ path: '/lib32', kind: 'dir' }] },
		})
		expect(split.mounts).toContainEqual({ kind: 'ro-bind', source: '/lib32', target: '/lib32' })
	})

	it.each(['/root', '/home', '/var', '/srv', '/mnt', '/opt', '/work'])(
		'never binds the host %s',
		(path) => {
			const bound = ROOT.mounts.flatMap((mount) =>
				mount.kind === 'ro-bind' || mount.kind === 'bind' ? [mount.source] : [],
			)
			expect(bound.filter((source) => source === path)).toEqual([])
		},
	)

	it('gives private /tmp, /run and /var/tmp, fresh /dev and /proc, and of /sys only the CPU topology', () => {
		for (const path of ['/tmp', '/run', '/var/tmp']) {
			expect(indexOfPair(args, '--tmpfs', path)).toBeGreaterThan(-1)
		}
		expect(indexOfPair(args, '--dev', '/dev')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--proc', '/proc')).toBeGreaterThan(-1)
		const sys = args.filter((arg) => arg.startsWith('/sys'))
		expect(sys).toEqual(['/sys/devices/system/cpu', '/sys/devices/system/cpu'])
		const noCpu = planSandboxRoot({ ...INPUT, layout: { ...MERGED_USR, sysCpu: false } })
		expect(JSON.stringify(noCpu.mounts)).not.toContain('/sys')
	})

	it('binds the agent runtime at a neutral path and the workspace read-write after the /tmp tmpfs', () => {
		expect(
			indexOfTriple(args, '--ro-bind', INPUT.runtime.agentNode, AGENT_NODE_PATH),
		).toBeGreaterThan(-1)
		expect(
			indexOfTriple(args, '--ro-bind', INPUT.runtime.agentBundle, AGENT_BUNDLE_PATH),
		).toBeGreaterThan(-1)
		const workspace = indexOfTriple(args, '--bind', INPUT.workspace.source, INPUT.workspace.target)
		expect(workspace).toBeGreaterThan(indexOfPair(args, '--tmpfs', '/tmp'))
		expect(indexOfPair(args, '--dir', '/tmp/home')).toBeGreaterThan(
			indexOfPair(args, '--tmpfs', '/tmp'),
		)
	})

	it('masks secrets and hidden paths after the binds that expose them, only where something is bound', () => {
		const shadow = indexOfTriple(args, '--ro-bind', INPUT.runtime.emptyFile, '/etc/shadow')
		expect(shadow).toBeGreaterThan(indexOfTriple(args, '--ro-bind', '/etc', '/etc'))
		expect(indexOfPair(args, '--tmpfs', '/etc/ssl/private')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--remount-ro', '/etc/ssl/private')).toBeGreaterThan(-1)
		const secret = indexOfTriple(args, '--ro-bind', INPUT.runtime.emptyFile, '/root/.nvm/secret')
		expect(secret).toBeGreaterThan(indexOfTriple(args, '--ro-bind', '/root/.nvm', '/root/.nvm'))
		expect(ROOT.masked).toEqual(['/etc/shadow', '/etc/ssl/private', '/root/.nvm/secret'])
		expect(args).not.toContain('/srv/not-bound')
	})

	it('remounts the root read-only after every mount', () => {
		const last = args.lastIndexOf('--remount-ro')
		expect(args[last + 1]).toBe('/')
		const lastMount = Math.max(
			args.lastIndexOf('--ro-bind'),
			args.lastIndexOf('--bind'),
			args.lastIndexOf('--tmpfs'),
		)
		expect(last).toBeGreaterThan(lastMount)
	})

	it('never mounts the agent control directory: the agent inherits its listening socket', () => {
		expect(args.filter((arg) => arg.includes('/control'))).toEqual([])
	})

	it.each([
		['/usr/bin/node', true],
		['/root/.nvm/versions/node/bin/node', true],
		['/tmp/namzu-sbx-a/workspace/x', true],
		['/opt/node/bin/node', false],
		['/tmp/namzu-runtime/node-1', false],
	])('visibleAtSamePath(%s) ⇒ %s', (path, visible) => {
		expect(visibleAtSamePath(path, ROOT)).toBe(visible)
	})

	it.each([
		['/usr/bin/node', true],
		['/etc/resolv.conf', true],
		['/run/systemd/resolve/stub-resolv.conf', false],
		['/usrx/bin', false],
	])('underSystemBinds(%s) ⇒ %s', (path, expected) => {
		expect(underSystemBinds(path, MERGED_USR)).toBe(expected)
	})
})

describe('buildBwrapArgs', () => {
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

	it('is uid 0 inside, drops every capability and sets a hostname', () => {
		const args = buildBwrapArgs(PLAN)
		expect(indexOfPair(args, '--uid', '0')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--gid', '0')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--cap-drop', 'ALL')).toBeGreaterThan(-1)
		expect(indexOfPair(args, '--hostname', 'namzu-sandbox')).toBeGreaterThan(-1)
	})

	it.each(['deny-all', 'allow-all'] as const)(
		'under %s egress gives the sandbox its own network namespace',
		(egress) => {
			expect(buildBwrapArgs({ ...PLAN, egress }).includes('--unshare-net')).toBe(true)
		},
	)

	it('sizes /tmp, /run, /var/tmp and a /dev/shm of its own when tmpfs sizes are planned', () => {
		const tmpfsSizes = { '/tmp': 8, '/var/tmp': 4, '/dev/shm': 2, '/run': 1 }
		const root = planSandboxRoot({ ...INPUT, tmpfsSizes }).mounts
		const args = buildBwrapArgs({ ...PLAN, root })
		for (const [mount, size] of [
			['/tmp', '8'],
			['/var/tmp', '4'],
			['/dev/shm', '2'],
			['/run', '1'],
		] as const) {
			const at = indexOfPair(args, '--tmpfs', mount)
			expect(args.slice(at - 2, at)).toEqual(['--size', size])
		}
		expect(indexOfPair(args, '--tmpfs', '/dev/shm')).toBeGreaterThan(
			indexOfPair(args, '--dev', '/dev'),
		)
		// The masks' empty directories stay unsized (read-only, nothing can be written there).
		const unsized = buildBwrapArgs(PLAN)
		expect(unsized).not.toContain('--size')
		expect(indexOfPair(unsized, '--tmpfs', '/dev/shm')).toBe(-1)
	})

	it('hands bwrap the seccomp program by descriptor, applied before the command', () => {
		const args = buildBwrapArgs({ ...PLAN, seccompFd: 9 })
		const at = args.indexOf('--seccomp')
		expect(args[at + 1]).toBe('9')
		expect(at).toBeLessThan(args.indexOf('--'))
		expect(buildBwrapArgs(PLAN)).not.toContain('--seccomp')
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
