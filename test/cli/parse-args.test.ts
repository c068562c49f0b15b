import { describe, expect, it } from 'vitest'
import { CliUsageError } from '../../src/cli/cli-errors.js'
import { formatCliHandle, parseCliHandle } from '../../src/cli/cli-handle.js'
import { formatGarbageReport } from '../../src/cli/gc-command.js'
import { parseCliArgs, USAGE } from '../../src/cli/parse-args.js'

describe('parseCliArgs', () => {
	const mcp = {
		kind: 'mcp',
		transport: 'stdio',
		host: '127.0.0.1',
		port: 8808,
		allowRemote: false,
		sharedSandboxes: false,
		allowNetwork: false,
		isolation: 'bubblewrap',
		tier: 'local',
	}
	const cases: Array<[string, string[], unknown]> = [
		['no verb means help', [], { kind: 'help' }],
		['mcp serves stdio by default', ['mcp'], mcp],
		['mcp --http on loopback by default', ['mcp', '--http'], { ...mcp, transport: 'http' }],
		[
			'mcp --http with every client sharing the sandboxes',
			['mcp', '--http', '--shared-sandboxes'],
			{ ...mcp, transport: 'http', sharedSandboxes: true },
		],
		[
			'mcp --http with a port, host, remote access and network',
			[
				'mcp',
				'--http',
				'--port',
				'0',
				'--host',
				'0.0.0.0',
				'--allow-remote',
				'--allow-network',
				'--tier',
				'local',
			],
			{
				...mcp,
				transport: 'http',
				port: 0,
				host: '0.0.0.0',
				allowRemote: true,
				allowNetwork: true,
			},
		],
		[
			'mcp --tier container with an image and the sandbox flags',
			[
				'mcp',
				'--tier',
				'container',
				'--image',
				'/images/guest',
				'--memory',
				'512',
				'--env',
				'A=1',
				'--allow-host',
				'pypi.org',
			],
			{
				...mcp,
				tier: 'container',
				sandbox: {
					image: '/images/guest',
					memoryLimitMb: 512,
					env: { A: '1' },
					allowHosts: ['pypi.org'],
				},
			},
		],
		[
			'mcp --http --tier container with the image first and network',
			['mcp', '--image', 'layout:v1', '--http', '--allow-network', '--tier', 'container'],
			{
				...mcp,
				transport: 'http',
				allowNetwork: true,
				tier: 'container',
				sandbox: { image: 'layout:v1' },
			},
		],
		[
			'run takes the command after --',
			['run', '--', 'sh', '-c', 'exit 3'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				detach: false,
				command: 'sh',
				args: ['-c', 'exit 3'],
			},
		],
		[
			'run options come before --',
			['run', '--allow-network', '--workspace', '/w', '--timeout-ms', '500', '--', 'ls', '-la'],
			{
				kind: 'run',
				allowNetwork: true,
				isolation: 'bubblewrap',
				detach: false,
				workspace: '/w',
				timeoutMs: 500,
				command: 'ls',
				args: ['-la'],
			},
		],
		[
			'flags after -- belong to the command',
			['run', '--', 'node', '--allow-network'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				detach: false,
				command: 'node',
				args: ['--allow-network'],
			},
		],
		[
			'run without -- takes the first positional as the command',
			['run', 'echo', 'hi'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				detach: false,
				command: 'echo',
				args: ['hi'],
			},
		],
		[
			'shell',
			['shell', '--no-isolation'],
			{ kind: 'shell', allowNetwork: false, isolation: 'none', persistent: false },
		],
		[
			'run --detach with a lifetime',
			['run', '--detach', '--keep-alive-ms', '60000', '--', 'sleep', '5'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				detach: true,
				keepAliveMs: 60000,
				command: 'sleep',
				args: ['5'],
			},
		],
		[
			'shell --persistent',
			['shell', '--persistent'],
			{ kind: 'shell', allowNetwork: false, isolation: 'bubblewrap', persistent: true },
		],
		[
			'attach an execution handle',
			['attach', '0123456789ab/exec_1f2e'],
			{
				kind: 'attach',
				handle: { kind: 'execution', sandboxId: '0123456789ab', executionId: 'exec_1f2e' },
			},
		],
		[
			'attach a session handle',
			['attach', '0123456789ab/session:term-1'],
			{
				kind: 'attach',
				handle: { kind: 'session', sandboxId: '0123456789ab', sessionId: 'term-1' },
			},
		],
		[
			'logs --follow',
			['logs', '--follow', '0123456789ab/session:job'],
			{
				kind: 'logs',
				follow: true,
				handle: { kind: 'session', sandboxId: '0123456789ab', sessionId: 'job' },
			},
		],
		['sessions of every kept-alive sandbox', ['sessions'], { kind: 'sessions' }],
		[
			'sessions of one sandbox',
			['sessions', '0123456789ab'],
			{ kind: 'sessions', sandboxId: '0123456789ab' },
		],
		['destroy', ['destroy', '0123456789ab'], { kind: 'destroy', sandboxId: '0123456789ab' }],
		['doctor --json', ['doctor', '--json'], { kind: 'doctor', json: true }],
		['gc', ['gc'], { kind: 'gc', dryRun: false }],
		['gc --dry-run', ['gc', '--dry-run'], { kind: 'gc', dryRun: true }],
		['mcp --help', ['mcp', '--help'], { kind: 'help' }],
		[
			'mcp --tier kubernetes with a namespace, template and the default kubeconfig',
			['mcp', '--tier', 'kubernetes', '--namespace', 'agents', '--template', 'task'],
			{
				...mcp,
				tier: 'kubernetes',
				kubernetes: { namespace: 'agents', template: 'task', inCluster: false },
			},
		],
		[
			'mcp --tier kubernetes over http with a pool, a kubeconfig, a context and pod-ip',
			[
				'mcp',
				'--http',
				'--tier',
				'kubernetes',
				'--namespace',
				'agents',
				'--template',
				'task',
				'--warm-pool',
				'pool',
				'--kubeconfig',
				'/etc/kube.yaml',
				'--context',
				'ci',
				'--agent-address',
				'pod-ip',
				'--agent-port',
				'7070',
			],
			{
				...mcp,
				transport: 'http',
				tier: 'kubernetes',
				kubernetes: {
					namespace: 'agents',
					template: 'task',
					inCluster: false,
					warmPool: 'pool',
					kubeconfig: '/etc/kube.yaml',
					context: 'ci',
					agentAddress: 'pod-ip',
					agentPort: 7070,
				},
			},
		],
		[
			'mcp --tier kubernetes --in-cluster',
			['mcp', '--tier', 'kubernetes', '--in-cluster', '--namespace', 'a', '--template', 't'],
			{
				...mcp,
				tier: 'kubernetes',
				kubernetes: { namespace: 'a', template: 't', inCluster: true },
			},
		],
		['run -h', ['run', '-h'], { kind: 'help' }],
		['doctor --help', ['doctor', '--help'], { kind: 'help' }],
		[
			'image build',
			['image', 'build'],
			{ kind: 'image', action: 'build', vm: false, rootfsOnly: false },
		],
		[
			'image build --vm',
			['image', 'build', '--vm'],
			{ kind: 'image', action: 'build', vm: true, rootfsOnly: false },
		],
		[
			'image build --rootfs-only',
			['image', 'build', '--rootfs-only'],
			{ kind: 'image', action: 'build', vm: false, rootfsOnly: true },
		],
		[
			'image path --vm',
			['image', 'path', '--vm'],
			{ kind: 'image', action: 'path', vm: true, rootfsOnly: false },
		],
	]
	for (const [title, argv, expected] of cases) {
		it(title, () => {
			expect(parseCliArgs(argv)).toEqual(expected)
		})
	}

	const refusals: Array<[string, string[]]> = [
		['an unknown verb', ['launch']],
		['run with no command', ['run', '--']],
		['an unknown option', ['run', '--fast', '--', 'true']],
		['a non-numeric timeout', ['run', '--timeout-ms', 'soon', '--', 'true']],
		['a workspace flag without a directory', ['shell', '--workspace']],
		['a command given to shell', ['shell', '--', 'ls']],
		['--keep-alive-ms without --detach', ['run', '--keep-alive-ms', '5000', '--', 'true']],
		['--keep-alive-ms without --persistent', ['shell', '--keep-alive-ms', '5000']],
		['--detach on shell', ['shell', '--detach']],
		['--persistent on run', ['run', '--persistent', '--', 'true']],
		['attach without a handle', ['attach']],
		['attach with a malformed handle', ['attach', 'not-a-sandbox/exec_1']],
		['attach with a bad session id', ['attach', '0123456789ab/session:-x']],
		['logs with two handles', ['logs', '0123456789ab/a', '0123456789ab/b']],
		['--follow on attach', ['attach', '--follow', '0123456789ab/exec_1']],
		['destroy of a session handle', ['destroy', '0123456789ab/session:x']],
		['destroy without a sandbox', ['destroy']],
		['gc with an argument', ['gc', '0123456789ab']],
		['gc with an unknown option', ['gc', '--force']],
		['mcp --port without --http', ['mcp', '--port', '9000']],
		['mcp --allow-remote without --http', ['mcp', '--allow-remote']],
		['mcp --shared-sandboxes without --http', ['mcp', '--shared-sandboxes']],
		['mcp with a port out of range', ['mcp', '--http', '--port', '70000']],
		['mcp with a tier it does not serve', ['mcp', '--tier', 'microvm']],
		['mcp --tier container without --image', ['mcp', '--tier', 'container']],
		['mcp --image on the local tier', ['mcp', '--image', '/images/guest']],
		[
			'mcp --tier container with --no-isolation',
			['mcp', '--tier', 'container', '--image', '/i', '--no-isolation'],
		],
		[
			'mcp --tier container with a Kubernetes flag',
			['mcp', '--tier', 'container', '--image', '/i', '--namespace', 'a'],
		],
		[
			'mcp --tier container with --in-cluster',
			['mcp', '--tier', 'container', '--image', '/i', '--in-cluster'],
		],
		[
			'mcp --tier kubernetes with --image',
			['mcp', '--tier', 'kubernetes', '--namespace', 'a', '--template', 't', '--image', '/i'],
		],
		['mcp --tier container with --image and no value', ['mcp', '--tier', 'container', '--image']],
		[
			'mcp --tier container with --allow-network and --allow-host',
			['mcp', '--tier', 'container', '--image', '/i', '--allow-network', '--allow-host', 'a.org'],
		],
		[
			'mcp --tier kubernetes without a namespace',
			['mcp', '--tier', 'kubernetes', '--template', 't'],
		],
		[
			'mcp --tier kubernetes without a template',
			['mcp', '--tier', 'kubernetes', '--namespace', 'a'],
		],
		[
			'mcp --tier kubernetes with --allow-network (the template decides egress)',
			['mcp', '--tier', 'kubernetes', '--namespace', 'a', '--template', 't', '--allow-network'],
		],
		[
			'mcp --tier kubernetes with --no-isolation',
			['mcp', '--tier', 'kubernetes', '--namespace', 'a', '--template', 't', '--no-isolation'],
		],
		[
			'mcp --in-cluster with a kubeconfig',
			[
				'mcp',
				'--tier',
				'kubernetes',
				'--namespace',
				'a',
				'--template',
				't',
				'--in-cluster',
				'--kubeconfig',
				'/k',
			],
		],
		[
			'mcp --agent-address that is neither service nor pod-ip',
			[
				'mcp',
				'--tier',
				'kubernetes',
				'--namespace',
				'a',
				'--template',
				't',
				'--agent-address',
				'x',
			],
		],
		['mcp --namespace on the local tier', ['mcp', '--namespace', 'a']],
		['mcp --namespace with no value', ['mcp', '--tier', 'kubernetes', '--namespace']],
		['mcp with an unknown option', ['mcp', '--sse']],
	]
	for (const [title, argv] of refusals) {
		it(`refuses ${title} with CliUsageError`, () => {
			expect(() => parseCliArgs(argv)).toThrow(CliUsageError)
		})
	}

	it.each([
		[
			['run', '--timeout-ms', 'soon', '--', 'true'],
			'--timeout-ms needs an integer in 1..2147483647, got "soon"',
		],
		[
			['run', '--timeout-ms', '0', '--', 'true'],
			'--timeout-ms needs an integer in 1..2147483647, got "0"',
		],
		[
			['run', '--timeout-ms', '3000000000', '--', 'true'],
			'--timeout-ms needs an integer in 1..2147483647, got "3000000000"',
		],
		[['run', '--timeout-ms'], '--timeout-ms needs an integer in 1..2147483647, got nothing'],
		[
			['run', '--detach', '--keep-alive-ms', '10', '--', 'true'],
			'--keep-alive-ms needs an integer in 1000..604800000, got "10"',
		],
		[
			['mcp', '--tier', 'container'],
			'--tier container needs --image DIR (a root filesystem or OCI layout)',
		],
		[
			['mcp', '--tier', 'container', '--image', '/i', '--namespace', 'a'],
			'--namespace applies only to mcp --tier kubernetes',
		],
		[['mcp', '--tier', 'vm'], '--tier: local, container or kubernetes, got "vm"'],
		[['image'], 'image needs build or path'],
		[['image', 'pull'], 'image: unknown action "pull" (build or path)'],
		[['image', 'path', '--rootfs-only'], 'unknown option for image path: --rootfs-only'],
		[['image', 'build', '--vm', '--rootfs-only'], 'image build: --vm excludes --rootfs-only'],
	])('names the flag, the range and what came: %j', (argv, message) => {
		expect(() => parseCliArgs(argv)).toThrow(new CliUsageError(message))
	})

	it('the usage text documents every verb, the detach key and the exit codes', () => {
		for (const text of ['run --detach', 'attach HANDLE', 'logs HANDLE', 'sessions [SANDBOX]']) {
			expect(USAGE).toContain(text)
		}
		for (const text of [
			'shell [--persistent',
			'destroy SANDBOX',
			'gc [--dry-run]',
			'image build [--vm | --rootfs-only]',
			'image path [--vm]',
			'Exit codes:',
		]) {
			expect(USAGE).toContain(text)
		}
		expect(USAGE).toContain('Ctrl-]')
	})
})

describe('gc output', () => {
	const report = {
		sandboxes: [
			{ id: '0123456789ab', stateRoot: '/s/namzu-sbx-0123456789ab', reason: 'owner-gone' },
		],
		locks: ['/s/namzu-claims/uid-100000.lock'],
		cgroups: ['/sys/fs/cgroup/cpu/namzu-sbx-aaaaaaaaaaaa'],
		runtimeFiles: ['/s/namzu-runtime-0/node-1-2-3-4'],
		partialCheckpoints: ['/s/namzu-checkpoints/.partial-0123456789abcdef'],
		checkpointVolume: ['/s/namzu-cow/mnt'],
		warmSnapshots: ['/s/namzu-snapshot-cache/.partial-1-2-0a0b0c0d'],
		failed: [],
	} as const
	it.each([
		[
			false,
			[
				'reaped sandbox 0123456789ab (owner-gone) /s/namzu-sbx-0123456789ab',
				'removed lock /s/namzu-claims/uid-100000.lock',
				'removed orphan cgroup /sys/fs/cgroup/cpu/namzu-sbx-aaaaaaaaaaaa',
				'removed runtime copy /s/namzu-runtime-0/node-1-2-3-4',
				'removed partial checkpoint /s/namzu-checkpoints/.partial-0123456789abcdef',
				'removed checkpoint volume leftover /s/namzu-cow/mnt',
				'removed warm-start snapshot /s/namzu-snapshot-cache/.partial-1-2-0a0b0c0d',
			],
		],
		[
			true,
			[
				'would reap sandbox 0123456789ab (owner-gone) /s/namzu-sbx-0123456789ab',
				'would remove lock /s/namzu-claims/uid-100000.lock',
				'would remove orphan cgroup /sys/fs/cgroup/cpu/namzu-sbx-aaaaaaaaaaaa',
				'would remove runtime copy /s/namzu-runtime-0/node-1-2-3-4',
				'would remove partial checkpoint /s/namzu-checkpoints/.partial-0123456789abcdef',
				'would remove checkpoint volume leftover /s/namzu-cow/mnt',
				'would remove warm-start snapshot /s/namzu-snapshot-cache/.partial-1-2-0a0b0c0d',
			],
		],
	])('dry run %s: one line per thing', (dryRun, lines) => {
		expect(formatGarbageReport(report, dryRun)).toEqual(lines)
	})
})

describe('CLI handles', () => {
	const cases: Array<[string, ReturnType<typeof parseCliHandle>]> = [
		['0123456789ab', { kind: 'sandbox', sandboxId: '0123456789ab' }],
		[
			'0123456789ab/exec_6a1c-22',
			{ kind: 'execution', sandboxId: '0123456789ab', executionId: 'exec_6a1c-22' },
		],
		[
			'0123456789ab/session:shell.1',
			{ kind: 'session', sandboxId: '0123456789ab', sessionId: 'shell.1' },
		],
		['0123456789AB', undefined],
		['0123456789ab/', undefined],
		['0123456789ab/../x', undefined],
		['0123456789ab/session:', undefined],
		['../0123456789ab', undefined],
	]
	for (const [text, expected] of cases) {
		it(`parses ${JSON.stringify(text)}${expected ? '' : ' as no handle'}`, () => {
			expect(parseCliHandle(text)).toEqual(expected)
			if (expected) expect(formatCliHandle(expected)).toBe(text)
		})
	}
})

describe('--help after a verb', () => {
	it("is the command's own argument once the command has started", () => {
		const parsed = parseCliArgs(['run', '--', 'node', '--help'])
		expect(parsed).toMatchObject({ kind: 'run', command: 'node', args: ['--help'] })
		expect(parseCliArgs(['run', 'node', '-h'])).toMatchObject({ command: 'node', args: ['-h'] })
	})
})
