import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const bin = join(root, 'bin', 'namzu-sandbox.js')
const hasBwrap = existsSync('/usr/bin/bwrap')
const hasTmux = spawnSync('sh', ['-c', 'command -v tmux']).status === 0

interface CliRun {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

function cli(args: string[], options: { interruptAfter?: string; env?: NodeJS.ProcessEnv } = {}) {
	return new Promise<CliRun>((resolve) => {
		const child = spawn(process.execPath, [bin, ...args], {
			env: { ...process.env, ...options.env },
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
			if (options.interruptAfter && stdout.includes(options.interruptAfter)) child.kill('SIGINT')
		})
		child.stderr.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.on('exit', (code) => resolve({ code, stdout, stderr }))
	})
}

describe.skipIf(!hasBwrap && !process.env.CI)('namzu-sandbox CLI', () => {
	let scratch: string
	beforeAll(async () => {
		scratch = await mkdtemp(join(tmpdir(), 'namzu-cli-test-'))
	})
	afterAll(async () => {
		await rm(scratch, { recursive: true, force: true })
	})

	it("run exits with the command's exit code and streams stdout and stderr apart", async () => {
		const run = await cli(['run', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'])
		expect(run.code).toBe(3)
		expect(run.stdout).toBe('out\n')
		expect(run.stderr).toBe('err\n')
	})

	it('run --workspace uses and keeps the given directory', async () => {
		const workspace = join(scratch, 'ws')
		const run = await cli([
			'run',
			'--workspace',
			workspace,
			'--',
			'sh',
			'-c',
			'echo kept > file.txt',
		])
		expect(run.code).toBe(0)
		expect(await readdir(workspace)).toEqual(['file.txt'])
	})

	it('run has no network by default and the host network with --allow-network', async () => {
		const probe = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '"
		const closed = await cli(['run', '--', 'sh', '-c', probe])
		expect(closed.stdout.trim()).toBe('lo')
		const open = await cli(['run', '--allow-network', '--', 'sh', '-c', probe])
		expect(open.stdout.trim().split(' ').length).toBeGreaterThan(1)
	})

	it('run --timeout-ms terminates the command and exits 124', async () => {
		const run = await cli(['run', '--timeout-ms', '300', '--', 'sh', '-c', 'sleep 5; echo never'])
		expect(run.code).toBe(124)
		expect(run.stdout).not.toContain('never')
	})

	it('Ctrl-C cancels through the abort contract: exit 130, the command never finishes', async () => {
		const marker = join(scratch, 'interrupted-marker')
		const run = await cli(
			[
				'run',
				'--workspace',
				scratch,
				'--',
				'sh',
				'-c',
				`trap '' TERM; echo started; sleep 2; touch ${marker}`,
			],
			{ interruptAfter: 'started' },
		)
		expect(run.code).toBe(130)
		await new Promise((resolve) => setTimeout(resolve, 2500))
		expect(existsSync(marker)).toBe(false)
	})

	it('refuses bad usage with exit code 2, one line and where to look', async () => {
		const run = await cli(['run', '--bogus', '--', 'true'])
		expect(run.code).toBe(2)
		expect(run.stderr).toBe(
			'namzu-sandbox: unknown option for run: --bogus\nsee: namzu-sandbox run --help\n',
		)
	})

	it('doctor reports the local tier ready on a machine with bubblewrap', async () => {
		const run = await cli(['doctor'])
		expect(run.code).toBe(0)
		expect(run.stdout).toContain('local tier: ready')
		expect(run.stdout).toMatch(/ok {3}agent reach/)
		expect(run.stdout).toMatch(
			/ok {3}seccomp {11}(x86_64|aarch64): denies \d+ syscalls .*; in force/,
		)
		expect(run.stdout).toContain('root a sandbox sees')
		// Host tuning is reported, whichever mode this host is in, and never applied by doctor.
		expect(run.stdout).toMatch(
			/^ {2}(ok|--) {3}cgroup migrations (low-latency|short waits|default)/m,
		)
		expect(run.stdout).toContain('egress allow-all')
		expect(run.stdout).toContain('default sandbox (backend.defaultLimits: required)')
		expect(run.stdout).toMatch(
			/memory \d+ MiB; 512 workload tasks \(threads count\) \+ 24 for the agent/,
		)
		expect(run.stdout).toContain('container tier runtimes (backend.runtime):')
		expect(run.stdout).toMatch(/^ {2}(ok|NO) {3}runc /m)
		expect(run.stdout).toMatch(/ok {3}egress static {5}static and resolver: /)
		if (/^ {2}ok {3}runsc /m.test(run.stdout)) {
			expect(run.stdout).toMatch(
				/runsc .*\n {9}egress deny-all\n {9}no allow-all, static, resolver: /,
			)
		}
		const json = await cli(['doctor', '--json'])
		expect(JSON.parse(json.stdout)).toMatchObject({
			ready: true,
			environment: 'linux-bwrap',
			network: { defaultEgress: 'deny-all' },
			defaultLimits: { mode: 'required', maxProcesses: 512 },
		})
		expect(JSON.parse(json.stdout).cgroupMigrations.source).toMatch(
			/^(mount|kernel-command-line|kernel-config|default)$/,
		)
		const runtimes = JSON.parse(json.stdout).containerRuntimes as { egress?: unknown }[]
		expect(runtimes.every((runtime) => typeof runtime.egress === 'object')).toBe(true)
		// Two full doctor runs, each starting real sandboxes, containers and a VM probe: generous.
	}, 240_000)

	it.skipIf(!hasTmux && !process.env.CI)(
		'shell works under tmux: a typed command runs, resize reaches the PTY, exit ends it',
		async () => {
			const session = `namzu-cli-${process.pid}`
			const tmux = (...args: string[]) => spawnSync('tmux', args, { encoding: 'utf8' })
			const screen = () => tmux('capture-pane', '-t', session, '-p').stdout
			const waitFor = async (text: string) => {
				for (let i = 0; i < 100; i++) {
					if (screen().includes(text)) return
					await new Promise((resolve) => setTimeout(resolve, 100))
				}
				throw new Error(`tmux screen never showed ${text}:\n${screen()}`)
			}
			tmux(
				'new-session',
				'-d',
				'-s',
				session,
				'-x',
				'100',
				'-y',
				'30',
				`${process.execPath} ${bin} shell; echo SHELL_EXIT=$?; sleep 60`,
			)
			try {
				await waitFor('#')
				tmux('send-keys', '-t', session, 'echo hello-$((6*7)); stty size', 'Enter')
				await waitFor('hello-42')
				await waitFor('30 100')
				tmux('resize-window', '-t', session, '-x', '120', '-y', '40')
				await new Promise((resolve) => setTimeout(resolve, 300))
				tmux('send-keys', '-t', session, 'stty size', 'Enter')
				await waitFor('40 120')
				tmux('send-keys', '-t', session, 'exit 5', 'Enter')
				await waitFor('SHELL_EXIT=5')
			} finally {
				tmux('kill-session', '-t', session)
			}
		},
	)
})
