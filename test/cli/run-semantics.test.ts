/**
 * `namzu-sandbox run` as a shell user meets it, through the real bin, real bubblewrap and (for the
 * terminal cases) a real PTY under tmux: piped stdin reaches the command and then EOF; output past
 * the library's 100 MiB retention cap passes whole; the documented exit codes (127, 126, 125, 141,
 * 130) and one-line errors (a stack trace only with --debug).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..', '..')
const bin = join(root, 'bin', 'namzu-sandbox.js')
const hasBwrap = existsSync('/usr/bin/bwrap')
const hasTmux = spawnSync('sh', ['-c', 'command -v tmux']).status === 0
const MiB = 1024 * 1024
const LONG_MS = 240_000

interface CliRun {
	readonly code: number | null
	readonly stdout: string
	readonly stdoutBytes: number
	readonly stderr: string
}

function cli(
	args: string[],
	options: { input?: string; env?: NodeJS.ProcessEnv; keepStdout?: boolean } = {},
): Promise<CliRun> {
	return new Promise((resolve) => {
		const child = spawn(process.execPath, [bin, ...args], {
			env: { ...process.env, ...options.env },
			stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stdoutBytes = 0
		let stderr = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			stdoutBytes += chunk.length
			if (options.keepStdout !== false) stdout += chunk.toString()
		})
		child.stderr?.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.stdin?.end(options.input)
		child.on('close', (code) => resolve({ code, stdout, stdoutBytes, stderr }))
	})
}

describe.skipIf(!hasBwrap && !process.env.CI)('namzu-sandbox run semantics', () => {
	it('forwards piped stdin, then EOF: echo print(1) | run -- python3 - prints 1', async () => {
		const python = await cli(['run', '--', 'python3', '-'], { input: 'print(1)\n' })
		expect(python).toMatchObject({ code: 0, stdout: '1\n' })
		const cat = await cli(['run', '--', 'sh', '-c', 'cat; echo "<eof>"'], { input: 'a\nb\n' })
		expect(cat).toMatchObject({ code: 0, stdout: 'a\nb\n<eof>\n' })
		const skipped = await cli(['run', '--no-stdin', '--', 'wc', '-c'], { input: 'ignored' })
		expect(skipped.stdout.trim()).toBe('0')
	})

	it(
		'passes output past the 100 MiB retention cap through whole',
		async () => {
			const total = 110 * MiB
			const run = await cli(['run', '--', 'head', '-c', String(total), '/dev/zero'], {
				keepStdout: false,
			})
			expect(run.code).toBe(0)
			expect(run.stdoutBytes).toBe(total)
			expect(run.stderr).toBe('')
		},
		LONG_MS,
	)

	it('exits 127 for a missing command and 126 for one that is not executable, in one line', async () => {
		const missing = await cli(['run', '--', 'no-such-command-here'])
		expect(missing.code).toBe(127)
		expect(missing.stderr).toBe(
			"namzu-sandbox: no-such-command-here: command not found in the sandbox (check the name and PATH; the sandbox sees the host's /usr read-only)\n",
		)
		const notExecutable = await cli(['run', '--', '/etc/passwd'])
		expect(notExecutable.code).toBe(126)
		expect(notExecutable.stderr).toContain('not executable in the sandbox')
		// Positive control: a command's own 127 passes through unchanged.
		const own = await cli(['run', '--', 'sh', '-c', 'exit 127'])
		expect(own).toMatchObject({ code: 127, stderr: '' })
	})

	it('exits 125 with one line when the sandbox cannot be made', async () => {
		const run = await cli(['run', '--', 'true'], {
			env: { NAMZU_SANDBOX_BWRAP_PATH: '/nonexistent/bwrap' },
		})
		expect(run.code).toBe(125)
		expect(run.stderr.trim().split('\n')).toHaveLength(1)
		expect(run.stderr).toContain('needs bubblewrap at /nonexistent/bwrap')
	})

	it('exits 141 when the reader of its output goes away, as a shell reports SIGPIPE', async () => {
		const piped = spawnSync(
			'bash',
			[
				'-c',
				`${process.execPath} ${bin} run -- sh -c 'seq 1 10000000' | head -n 2; echo "rc=\${PIPESTATUS[0]}"`,
			],
			{ encoding: 'utf8', timeout: LONG_MS },
		)
		expect(piped.stdout).toBe('1\n2\nrc=141\n')
	})

	it('prints a bad handle as one line without a stack, the stack only with --debug', async () => {
		const bare = await cli(['logs', '0123456789ab'])
		expect(bare.code).toBe(2)
		expect(bare.stderr).toBe(
			'namzu-sandbox: logs needs SANDBOX/EXECUTION or SANDBOX/session:ID, not a bare sandbox; list them with: namzu-sandbox sessions 0123456789ab\nsee: namzu-sandbox logs --help\n',
		)
		const attach = await cli(['attach', '0123456789ab/exec_1'])
		expect(attach.code).toBe(3)
		expect(attach.stderr).toMatch(/^namzu-sandbox: LocalSandboxNotFoundError: [^\n]*\n$/)
		const debug = await cli(['attach', '0123456789ab/exec_1', '--debug'])
		expect(debug.code).toBe(3)
		expect(debug.stderr).toMatch(/\n {4}at /)
	})

	describe.skipIf(!hasTmux && !process.env.CI)('on a terminal (tmux)', () => {
		const tmux = (...args: string[]) => spawnSync('tmux', args, { encoding: 'utf8' })
		async function inTmux(
			command: string,
			drive: (
				keys: (...keys: string[]) => void,
				waitFor: (text: string) => Promise<void>,
			) => Promise<void>,
		): Promise<void> {
			const session = `namzu-run-${process.pid}-${Math.random().toString(16).slice(2, 8)}`
			const screen = () => tmux('capture-pane', '-t', session, '-p').stdout
			const waitFor = async (text: string) => {
				for (let i = 0; i < 300; i++) {
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
				`${command}; echo RUN_EXIT=$?; sleep 60`,
			)
			try {
				await drive((...keys) => tmux('send-keys', '-t', session, ...keys), waitFor)
			} finally {
				tmux('kill-session', '-t', session)
			}
		}

		it(
			'forwards typed input and Ctrl-D as EOF',
			async () => {
				await inTmux(
					`${process.execPath} ${bin} run -- sh -c 'read line; echo "got-$line"; cat >/dev/null; echo done-$((6*7))'`,
					async (keys, waitFor) => {
						await new Promise((resolve) => setTimeout(resolve, 1500))
						keys('hello', 'Enter')
						await waitFor('got-hello')
						keys('C-d')
						await waitFor('done-42')
						await waitFor('RUN_EXIT=0')
					},
				)
			},
			LONG_MS,
		)

		it(
			'Ctrl-C ends the command: exit 130',
			async () => {
				await inTmux(
					`${process.execPath} ${bin} run -- sh -c 'echo ready-$((2*3)); sleep 600'`,
					async (keys, waitFor) => {
						await waitFor('ready-6')
						keys('C-c')
						await waitFor('RUN_EXIT=130')
					},
				)
			},
			LONG_MS,
		)
	})
})
