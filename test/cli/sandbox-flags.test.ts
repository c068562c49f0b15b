/**
 * The sandbox flags of `run` (shared with `shell` and `mcp`): parsed into what the library takes,
 * refused with one line naming the flag (exit 2), and seen by the command in a real sandbox
 * (environment, an allowlist that refuses everything else, the container tier).
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CliUsageError } from '../../src/cli/cli-errors.js'
import { parseCliArgs } from '../../src/cli/parse-args.js'
import { parseEnvFile } from '../../src/cli/sandbox-flags.js'
import { guestRootfs } from '../deploy/guest-rootfs-runner.js'
import { bundleCli, childEnv, type SourceBundle } from '../helpers/bundle-source.js'

const hasBwrap = existsSync('/usr/bin/bwrap')
const LONG_MS = 240_000
let cliBundle: SourceBundle | undefined
let work = ''

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
	if (!cliBundle) throw new Error('CLI bundle missing')
	const file = cliBundle.file
	return new Promise((resolve) => {
		const child = spawn(process.execPath, [file, ...args], {
			env: childEnv({ NAMZU_FLAG_TEST: 'from-shell' }),
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.on('close', (code) => resolve({ code, stdout, stderr }))
	})
}

beforeAll(async () => {
	work = await mkdtemp(join(tmpdir(), 'namzu-cli-flags-'))
	cliBundle = await bundleCli()
}, LONG_MS)
afterAll(async () => {
	await cliBundle?.remove()
	await rm(work, { recursive: true, force: true })
})

describe('sandbox flags: parsing', () => {
	it('run collects env, limits, an allowlist and the tier into the command', () => {
		const parsed = parseCliArgs([
			'run',
			'--env',
			'A=1',
			'--env',
			'B=x=y',
			'--env-file',
			'/e',
			'--memory',
			'256',
			'--cpus',
			'1.5',
			'--pids',
			'64',
			'--disk',
			'32',
			'--allow-host',
			'pypi.org',
			'--allow-host',
			'*.pythonhosted.org:443',
			'--host-port',
			'5432',
			'--best-effort-limits',
			'--',
			'true',
		])
		expect(parsed).toMatchObject({
			kind: 'run',
			env: { A: '1', B: 'x=y' },
			envFiles: ['/e'],
			memoryLimitMb: 256,
			cpuLimit: 1.5,
			maxProcesses: 64,
			diskLimitMb: 32,
			allowHosts: ['pypi.org', '*.pythonhosted.org:443'],
			hostPorts: [5432],
			bestEffortLimits: true,
			command: 'true',
		})
		expect(
			parseCliArgs(['run', '--tier', 'container', '--image', '/img', '--', 'true']),
		).toMatchObject({ tier: 'container', image: '/img' })
		expect(parseCliArgs(['mcp', '--memory', '512', '--allow-host', 'x.org'])).toMatchObject({
			kind: 'mcp',
			sandbox: { memoryLimitMb: 512, allowHosts: ['x.org'] },
		})
	})

	it.each([
		[
			['run', '--memory', 'lots', '--', 'true'],
			'--memory needs an integer in 1..2147483647, got "lots"',
		],
		[['run', '--cpus', '0', '--', 'true'], '--cpus needs a number of cores in 0.01..1024, got "0"'],
		[['run', '--pids', '-1', '--', 'true'], '--pids needs an integer in 1..2147483647, got "-1"'],
		[['run', '--disk', '1', '--', 'true'], '--disk needs an integer in 16..16777216, got "1"'],
		[
			['run', '--host-port', '70000', '--', 'true'],
			'--host-port needs an integer in 1..65535, got "70000"',
		],
		[['run', '--env', '1A=b', '--', 'true'], '--env needs NAME=VALUE, got "1A=b"'],
		[['run', '--tier', 'vm', '--', 'true'], '--tier needs local or container, got "vm"'],
		[
			['run', '--tier', 'container', '--', 'true'],
			'--tier container needs --image DIR (a root filesystem or OCI layout)',
		],
		[['run', '--image', '/i', '--', 'true'], '--image applies only to --tier container'],
		[
			['run', '--allow-network', '--allow-host', 'a.org', '--', 'true'],
			'--allow-network excludes --allow-host and --host-port (those allow only what they name)',
		],
		[
			['run', '--detach', '--tier', 'container', '--image', '/i', '--', 'true'],
			'run --detach: kept-alive sandboxes are local only (no --tier container)',
		],
		[
			['mcp', '--tier', 'kubernetes', '--namespace', 'a', '--template', 't', '--memory', '5'],
			'--memory: on --tier kubernetes the template decides it',
		],
	])('refuses %j naming the flag', (argv, message) => {
		expect(() => parseCliArgs(argv)).toThrow(new CliUsageError(message))
	})

	it('reads an env file: NAME=VALUE lines, comments and blanks skipped, a bad line named', () => {
		expect(parseEnvFile('f', '# c\nA=1\n\nB= two words \n')).toEqual({ A: '1', B: ' two words' })
		expect(() => parseEnvFile('f', 'A=1\nnot a pair\n')).toThrow(
			new CliUsageError('--env-file f:2: needs NAME=VALUE'),
		)
	})
})

const UMOCI = '/usr/bin/umoci'

describe('--tier container --image is checked at start (run, shell)', () => {
	beforeAll(async () => {
		await mkdir(join(work, 'neither'))
		if (existsSync(UMOCI)) {
			// A real OCI layout, made by the tool the tier unpacks with, tagged `latest` only.
			execFileSync(UMOCI, ['init', '--layout', join(work, 'layout')])
			execFileSync(UMOCI, ['new', '--image', `${join(work, 'layout')}:latest`])
		}
	})

	it.each([
		['a missing directory', 'missing', 'does not exist', 'namzu-sandbox image build'],
		[
			'a directory that is neither a layout nor a root filesystem',
			'neither',
			'no oci-layout file',
			'namzu-sandbox image build',
		],
		[
			'an OCI layout without the tag',
			'layout:v9',
			'has no tag "v9" (its tags: latest)',
			'layout:TAG',
		],
	])(
		'%s: one line naming SandboxConfigError and what to do, exit 125, nothing run',
		async (_, given, named, todo) => {
			if (given.startsWith('layout') && !existsSync(UMOCI)) return
			const image = join(work, given)
			for (const verb of [
				['run', '--tier', 'container', '--image', image, '--', 'echo', 'ran'],
				['shell', '--tier', 'container', '--image', image],
			]) {
				const run = await cli(verb)
				expect(run.code).toBe(125)
				expect(run.stdout).toBe('')
				const lines = run.stderr.trimEnd().split('\n')
				expect(lines).toHaveLength(1)
				expect(lines[0]).toMatch(/^namzu-sandbox: SandboxConfigError: backend\.image: /)
				expect(lines[0]).toContain(named)
				expect(lines[0]).toContain(todo)
			}
		},
		LONG_MS,
	)
})

describe.skipIf(!hasBwrap && !process.env.CI)('sandbox flags: in a real sandbox', () => {
	it(
		'--env and --env-file reach the command (--env wins; --env NAME passes the shell value)',
		async () => {
			await writeFile(join(work, 'env'), 'A=file\nB=file\n')
			const run = await cli([
				'run',
				'--env-file',
				join(work, 'env'),
				'--env',
				'B=flag',
				'--env',
				'NAMZU_FLAG_TEST',
				'--',
				'sh',
				'-c',
				'echo $A $B $NAMZU_FLAG_TEST',
			])
			expect(run).toMatchObject({ code: 0, stdout: 'file flag from-shell\n' })
		},
		LONG_MS,
	)

	it(
		'a bad flag value is one line naming the flag and exit 2; a bad env file line too',
		async () => {
			const bad = await cli(['run', '--memory', 'lots', '--', 'true'])
			expect(bad).toMatchObject({
				code: 2,
				stderr:
					'namzu-sandbox: --memory needs an integer in 1..2147483647, got "lots"\nsee: namzu-sandbox run --help\n',
			})
			await writeFile(join(work, 'bad-env'), 'oops\n')
			const file = await cli(['run', '--env-file', join(work, 'bad-env'), '--', 'true'])
			expect(file.code).toBe(2)
			expect(file.stderr).toContain(`--env-file ${join(work, 'bad-env')}:1: needs NAME=VALUE`)
		},
		LONG_MS,
	)

	it(
		'--allow-host: a host off the list is refused (the allowlist is real); the sandbox still runs',
		async () => {
			const run = await cli([
				'run',
				'--allow-host',
				'example.invalid',
				'--',
				'python3',
				'-c',
				'import socket\ntry:\n socket.create_connection(("1.1.1.1", 53), timeout=5); print("open")\nexcept OSError: print("refused")',
			])
			expect(run).toMatchObject({ code: 0, stdout: 'refused\n' })
		},
		LONG_MS,
	)

	it.skipIf(
		process.getuid?.() !== 0 || !existsSync('/usr/sbin/runc') || guestRootfs() === undefined,
	)(
		'--tier container --image runs the command in an OCI container with the flags applied',
		async () => {
			const run = await cli([
				'run',
				'--tier',
				'container',
				'--image',
				guestRootfs() ?? '',
				'--env',
				'A=7',
				'--',
				'sh',
				'-c',
				'echo in-container-$A; test -d /workspace && echo has-workspace',
			])
			expect(run).toMatchObject({ code: 0, stdout: 'in-container-7\nhas-workspace\n' })
		},
		LONG_MS,
	)
})
