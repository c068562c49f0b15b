/**
 * The verbs that drive a kept-alive sandbox from later processes, as `docker exec / kill / cp /
 * port` do, through the CLI bundled from source, real bubblewrap and (for `exec -it`) a real PTY
 * under tmux: each verb is its own process, the sandbox outlives them all.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destroyLocalSandbox, listLocalSandboxes } from '../../src/backends/machine/index.js'
import { CP_CHUNK_BYTES } from '../../src/cli/cp-command.js'
import { pollUntil } from '../../src/common/poll-until.js'
import { bundleCli, childEnv, type SourceBundle } from '../helpers/bundle-source.js'

const hasBwrap = existsSync('/usr/bin/bwrap')
const hasTmux = spawnSync('sh', ['-c', 'command -v tmux']).status === 0
const LONG_MS = 240_000

let stateDir = ''
let work = ''
let cliBundle: SourceBundle | undefined
let sandboxId = ''

interface CliRun {
	readonly code: number | null
	readonly stdout: string
	readonly stderr: string
}

function cli(args: string[], input?: string): Promise<CliRun> {
	if (!cliBundle) throw new Error('CLI bundle missing')
	const file = cliBundle.file
	return new Promise((resolve) => {
		const child = spawn(process.execPath, [file, ...args], {
			env: childEnv({ NAMZU_SANDBOX_STATE_DIR: stateDir }),
			stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
		})
		let stdout = ''
		let stderr = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
		})
		child.stderr?.on('data', (chunk: Buffer) => {
			stderr += chunk.toString()
		})
		child.stdin?.end(input)
		child.on('close', (code) => resolve({ code, stdout, stderr }))
	})
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex')

beforeAll(async () => {
	stateDir = await mkdtemp(join(tmpdir(), 'namzu-cli-verbs-state-'))
	await chmod(stateDir, 0o711)
	work = await mkdtemp(join(tmpdir(), 'namzu-cli-verbs-work-'))
	cliBundle = await bundleCli()
}, LONG_MS)
afterAll(async () => {
	for (const listing of await listLocalSandboxes({ stateDir })) {
		await destroyLocalSandbox(listing.id, { stateDir }).catch(() => undefined)
	}
	await cliBundle?.remove()
	await rm(stateDir, { recursive: true, force: true })
	await rm(work, { recursive: true, force: true })
})

/** Waits (a generous bound, not a speed claim) until `done`, or fails naming `what`. */
async function eventually(what: string, done: () => Promise<boolean>): Promise<void> {
	if (!(await pollUntil(done, performance.now() + 60_000))) throw new Error(`never: ${what}`)
}

describe.skipIf(!hasBwrap && !process.env.CI)('namzu-sandbox exec, kill, cp, port', () => {
	beforeAll(async () => {
		const started = await cli(['run', '--detach', '--', 'sleep', '600'])
		expect(started.code).toBe(0)
		sandboxId = started.stdout.trim().split('/')[0] ?? ''
		expect(sandboxId).toMatch(/^[0-9a-f]{12}$/)
	}, LONG_MS)

	it(
		'exec runs in the kept-alive sandbox with its exit code; -i passes stdin, without it none; -e and -w apply',
		async () => {
			const exited = await cli(['exec', sandboxId, '--', 'sh', '-c', 'echo hi; exit 5'])
			expect(exited).toMatchObject({ code: 5, stdout: 'hi\n' })
			// The same workspace every time: a file left by one exec is there for the next.
			expect((await cli(['exec', sandboxId, '--', 'sh', '-c', 'echo kept > note'])).code).toBe(0)
			const piped = await cli(['exec', '-i', sandboxId, '--', 'sh', '-c', 'cat; cat note'], 'in\n')
			expect(piped).toMatchObject({ code: 0, stdout: 'in\nkept\n' })
			const closed = await cli(['exec', sandboxId, '--', 'wc', '-c'], 'not passed')
			expect(closed.stdout.trim()).toBe('0')
			await cli(['exec', sandboxId, '--', 'mkdir', '-p', 'sub'])
			const shaped = await cli([
				'exec',
				'-e',
				'A=1',
				'-w',
				'sub',
				sandboxId,
				'--',
				'sh',
				'-c',
				'echo $A; pwd',
			])
			expect(shaped.code).toBe(0)
			expect(shaped.stdout).toMatch(/^1\n.*\/sub\n$/)
		},
		LONG_MS,
	)

	it(
		'exec into an unknown sandbox exits 3, a missing command 127, bad usage 2 — each one line',
		async () => {
			const unknown = await cli(['exec', '0123456789ab', '--', 'true'])
			expect(unknown.code).toBe(3)
			expect(unknown.stderr).toContain('LocalSandboxNotFoundError')
			expect((await cli(['exec', sandboxId, '--', 'no-such-command-x'])).code).toBe(127)
			const usage = await cli(['exec', 'nonsense', '--', 'true'])
			expect(usage.code).toBe(2)
			expect(usage.stderr).toBe(
				'namzu-sandbox: exec: "nonsense" is not a sandbox id (12 hex digits)\nsee: namzu-sandbox exec --help\n',
			)
		},
		LONG_MS,
	)

	it(
		'exec -d starts a detached command that sessions lists; kill ends it alone and the sandbox keeps serving',
		async () => {
			const started = await cli(['exec', '-d', sandboxId, '--', 'sh', '-c', 'echo up; sleep 600'])
			expect(started.code).toBe(0)
			const handle = started.stdout.trim()
			expect(handle).toMatch(new RegExp(`^${sandboxId}/exec_[0-9a-f-]{36}$`))
			const listed = await cli(['sessions', sandboxId])
			expect(listed.stdout).toContain(`${handle}  detached  running  sh -c echo up; sleep 600`)

			const killed = await cli(['kill', handle])
			expect(killed.code).toBe(0)
			const after = await cli(['sessions', sandboxId])
			expect(after.stdout).toContain(`${handle}  detached  cancelled`)
			expect(after.stdout).toContain(`${sandboxId}  running`)
			expect((await cli(['exec', sandboxId, '--', 'true'])).code).toBe(0)

			const unknown = await cli(['kill', `${sandboxId}/exec_00000000-0000-4000-8000-000000000000`])
			expect(unknown.code).toBe(3)
			const badSignal = await cli(['kill', '--signal', 'WINCH', handle])
			expect(badSignal.code).toBe(2)
			expect(badSignal.stderr).toContain('--signal needs one of TERM, KILL, INT, HUP, QUIT, USR1')
			const sessionSignal = await cli(['kill', '--signal', 'USR1', `${sandboxId}/session:s1`])
			expect(sessionSignal.code).toBe(2)
			expect(sessionSignal.stderr).toContain('a session takes one of TERM, KILL, INT, HUP')
		},
		LONG_MS,
	)

	it(
		'kill --signal delivers exactly that signal to a detached command, which handles it and runs on',
		async () => {
			// The trap writes the file and the loop goes on: USR1 is delivered, not a cancel.
			const script = 'trap "echo usr1 > got-usr1" USR1; echo up; while :; do sleep 0.2; done'
			const started = await cli(['exec', '-d', sandboxId, '--', 'sh', '-c', script])
			expect(started.code).toBe(0)
			const handle = started.stdout.trim()
			// The trap is set before `up` is written; wait for it so the signal cannot come first.
			await eventually('the trap set', async () =>
				(await cli(['logs', handle])).stdout.includes('up'),
			)
			const sent = await cli(['kill', '--signal', 'USR1', handle])
			expect(sent.code).toBe(0)
			expect(sent.stderr).toContain('sent SIGUSR1')
			await eventually(
				'the trap ran',
				async () => (await cli(['exec', sandboxId, '--', 'cat', 'got-usr1'])).stdout === 'usr1\n',
			)
			expect((await cli(['sessions', sandboxId])).stdout).toContain(`${handle}  detached  running`)
			const unknown = `${sandboxId}/exec_00000000-0000-4000-8000-000000000000`
			const missing = await cli(['kill', '--signal', 'USR1', unknown])
			expect({ code: missing.code, lines: missing.stderr.trim().split('\n').length }).toEqual({
				code: 3,
				lines: 1,
			})
			// Positive control for the default: no --signal cancels it.
			expect((await cli(['kill', handle])).code).toBe(0)
			expect((await cli(['sessions', sandboxId])).stdout).toContain(
				`${handle}  detached  cancelled`,
			)
		},
		LONG_MS,
	)

	it(
		'cp copies a file larger than one chunk both ways byte for byte, and a directory tree',
		async () => {
			const big = randomBytes(CP_CHUNK_BYTES * 2 + 12_345)
			await writeFile(join(work, 'big.bin'), big)
			const up = await cli(['cp', join(work, 'big.bin'), `${sandboxId}:big.bin`])
			expect(up.code).toBe(0)
			const inside = await cli(['exec', sandboxId, '--', 'sha256sum', 'big.bin'])
			expect(inside.stdout.split(' ')[0]).toBe(sha256(big))
			// No temporary part is left behind.
			expect((await cli(['exec', sandboxId, '--', 'ls'])).stdout).not.toContain('namzu-cp')

			await mkdir(join(work, 'back'))
			const down = await cli(['cp', `${sandboxId}:big.bin`, join(work, 'back')])
			expect(down.code).toBe(0)
			expect(sha256(await readFile(join(work, 'back', 'big.bin')))).toBe(sha256(big))

			await mkdir(join(work, 'tree', 'sub'), { recursive: true })
			await writeFile(join(work, 'tree', 'a.txt'), 'a')
			await writeFile(join(work, 'tree', 'sub', 'b.txt'), 'b')
			expect((await cli(['cp', join(work, 'tree'), `${sandboxId}:`])).code).toBe(0)
			const listed = await cli(['exec', sandboxId, '--', 'cat', 'tree/a.txt', 'tree/sub/b.txt'])
			expect(listed.stdout).toBe('ab')
			expect((await cli(['cp', `${sandboxId}:tree`, join(work, 'tree-back')])).code).toBe(0)
			expect(await readFile(join(work, 'tree-back', 'sub', 'b.txt'), 'utf8')).toBe('b')

			const missing = await cli(['cp', `${sandboxId}:nothing-here`, work])
			expect(missing.code).toBe(1)
			expect(missing.stderr).toContain('CliPathNotFoundError')
			const both = await cli(['cp', join(work, 'big.bin'), join(work, 'x')])
			expect(both.code).toBe(2)
		},
		LONG_MS,
	)

	it(
		'cp cannot reach past the sandbox: a guest symlink to a host file is not followed out',
		async () => {
			await writeFile(join(work, 'host-secret'), 'secret')
			await cli(['exec', sandboxId, '--', 'ln', '-sf', join(work, 'host-secret'), 'link'])
			const out = await cli(['cp', `${sandboxId}:link`, join(work, 'got')])
			expect(out.code).not.toBe(0)
			expect(existsSync(join(work, 'got'))).toBe(false)
		},
		LONG_MS,
	)

	it(
		'port prints a preview URL that serves the guest port with its token (401 without) until Ctrl-C',
		async () => {
			if (!cliBundle) throw new Error('CLI bundle missing')
			const server = await cli([
				'exec',
				'-d',
				sandboxId,
				'--',
				'python3',
				'-m',
				'http.server',
				'8765',
			])
			expect(server.code).toBe(0)
			const child = spawn(process.execPath, [cliBundle.file, 'port', sandboxId, '8765'], {
				env: childEnv({ NAMZU_SANDBOX_STATE_DIR: stateDir }),
				stdio: ['ignore', 'pipe', 'pipe'],
			})
			let stderr = ''
			child.stderr.on('data', (chunk: Buffer) => {
				stderr += chunk.toString()
			})
			const url = await new Promise<string>((resolve, reject) => {
				child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))
				child.once('exit', () => reject(new Error(`port exited early: ${stderr}`)))
			})
			const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
			try {
				expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/)
				let body = ''
				// The server may still be binding its port.
				for (let attempt = 0; attempt < 100 && !body.includes('Directory listing'); attempt++) {
					const response = await fetch(url).catch(() => undefined)
					body = response?.ok ? await response.text() : ''
					if (!body) await new Promise((resolve) => setTimeout(resolve, 200))
				}
				expect(body).toContain('Directory listing')
				const bare = await fetch(url.replace(/\?token=.*$/, ''))
				expect(bare.status).toBe(401)
				expect(stderr).toContain('Ctrl-C ends it')
			} finally {
				child.kill('SIGINT')
			}
			expect(await exited).toBe(0)
		},
		LONG_MS,
	)

	it.skipIf(!hasTmux && !process.env.CI)(
		'exec -it under tmux: a PTY, typed input reaches the command, its exit code comes back',
		async () => {
			if (!cliBundle) throw new Error('CLI bundle missing')
			const session = `namzu-exec-${process.pid}`
			const tmux = (...args: string[]) => spawnSync('tmux', args, { encoding: 'utf8' })
			const screen = () => tmux('capture-pane', '-t', session, '-p').stdout
			const waitFor = async (text: string) => {
				for (let i = 0; i < 300; i++) {
					if (screen().includes(text)) return
					await new Promise((resolve) => setTimeout(resolve, 100))
				}
				throw new Error(`tmux screen never showed ${text}:\n${screen()}`)
			}
			const command = `NAMZU_SANDBOX_STATE_DIR=${stateDir} ${process.execPath} ${cliBundle.file} exec -it ${sandboxId} -- sh -c 'test -t 0 && echo tty-$((3*3)); read line; echo "got-$line"; exit 4'`
			tmux(
				'new-session',
				'-d',
				'-s',
				session,
				'-x',
				'100',
				'-y',
				'30',
				`${command}; echo EXEC_EXIT=$?; sleep 60`,
			)
			try {
				await waitFor('tty-9')
				tmux('send-keys', '-t', session, 'hello', 'Enter')
				await waitFor('got-hello')
				await waitFor('EXEC_EXIT=4')
			} finally {
				tmux('kill-session', '-t', session)
			}
		},
		LONG_MS,
	)
})
