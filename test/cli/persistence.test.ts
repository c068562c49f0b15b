import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destroyLocalSandbox, listLocalSandboxes } from '../../src/backends/machine/index.js'
import { bundleCli, childEnv, type SourceBundle } from '../helpers/bundle-source.js'
import { type ProcessRun, runNodeToExit } from '../helpers/run-to-exit.js'

const hasBwrap = existsSync('/usr/bin/bwrap')
const hasTmux = spawnSync('sh', ['-c', 'command -v tmux']).status === 0

let stateDir = ''
let cliBundle: SourceBundle | undefined

function env(): NodeJS.ProcessEnv {
	return childEnv({ NAMZU_SANDBOX_STATE_DIR: stateDir })
}

function cli(args: string[]): Promise<ProcessRun> {
	if (!cliBundle) throw new Error('CLI bundle missing')
	return runNodeToExit([cliBundle.file, ...args], { env: env() })
}

beforeAll(async () => {
	stateDir = await mkdtemp(join(tmpdir(), 'namzu-cli-state-'))
	// Searchable: on a root host each sandbox's own uid passes through it (see README).
	await chmod(stateDir, 0o711)
	cliBundle = await bundleCli()
})
afterAll(async () => {
	for (const listing of await listLocalSandboxes({ stateDir })) {
		await destroyLocalSandbox(listing.id, { stateDir }).catch(() => undefined)
	}
	await cliBundle?.remove()
	await rm(stateDir, { recursive: true, force: true })
})

describe.skipIf(!hasBwrap && !process.env.CI)('namzu-sandbox persistence verbs', () => {
	it('run --detach exits at once with a handle; a second process attaches and gets the remaining output and the exit code', async () => {
		const started = await cli([
			'run',
			'--detach',
			'--keep-alive-ms',
			'120000',
			'--',
			'sh',
			'-c',
			'echo first; sleep 1; echo second; echo oops >&2; exit 7',
		])
		expect(started.code).toBe(0)
		const handle = started.stdout.trim()
		expect(handle).toMatch(/^[0-9a-f]{12}\/exec_[0-9a-f-]{36}$/)
		const [sandboxId] = handle.split('/')
		if (!sandboxId) throw new Error('no sandbox id')

		const attached = await cli(['attach', handle])
		expect(attached.code).toBe(7)
		expect(attached.stdout).toBe('first\nsecond\n')
		expect(attached.stderr).toContain('oops\n')

		// Every attach within the retention window resolves the same; logs prints without attaching.
		const again = await cli(['attach', handle])
		expect(again.code).toBe(7)
		const logs = await cli(['logs', handle])
		expect(logs.code).toBe(0)
		expect(logs.stdout).toBe('first\nsecond\n')

		const sessions = await cli(['sessions'])
		expect(sessions.code).toBe(0)
		expect(sessions.stdout).toContain(`${sandboxId}  running`)

		const destroyed = await cli(['destroy', sandboxId])
		expect(destroyed.code).toBe(0)
		const gone = await cli(['attach', handle])
		expect(gone.code).toBe(3)
		expect(gone.stderr).toContain('LocalSandboxNotFoundError')
	})

	it('run --detach survives its own exit: attach while the command still runs follows it live', async () => {
		const started = await cli([
			'run',
			'--detach',
			'--',
			'sh',
			'-c',
			'for i in 1 2 3; do echo tick-$i; sleep 0.4; done; exit 0',
		])
		expect(started.code).toBe(0)
		const handle = started.stdout.trim()
		const attached = await cli(['attach', handle])
		expect(attached.code).toBe(0)
		expect(attached.stdout).toBe('tick-1\ntick-2\ntick-3\n')
		await cli(['destroy', handle.split('/')[0] ?? ''])
	})

	it('attach of an unknown execution in a live sandbox exits 3; bad usage exits 2', async () => {
		const started = await cli(['run', '--detach', '--', 'true'])
		const [sandboxId] = started.stdout.trim().split('/')
		const unknown = await cli(['attach', `${sandboxId}/exec_00000000-0000-4000-8000-000000000000`])
		expect(unknown.code).toBe(3)
		const usage = await cli(['attach', 'nonsense'])
		expect(usage.code).toBe(2)
		await cli(['destroy', sandboxId ?? ''])
	})

	it.skipIf(!hasTmux && !process.env.CI)(
		'shell --persistent under tmux: Ctrl-] detaches, a second process re-attaches with the replay, input works, exit code passes through',
		async () => {
			if (!cliBundle) throw new Error('CLI bundle missing')
			const session = `namzu-persist-${process.pid}`
			const tmux = (...args: string[]) => spawnSync('tmux', args, { encoding: 'utf8' })
			const screen = (target: string) => tmux('capture-pane', '-t', target, '-p', '-J').stdout
			const waitFor = async (target: string, text: string | RegExp) => {
				for (let i = 0; i < 150; i++) {
					const shown = screen(target)
					if (typeof text === 'string' ? shown.includes(text) : text.test(shown)) return shown
					await new Promise((resolve) => setTimeout(resolve, 100))
				}
				throw new Error(`tmux ${target} never showed ${text}:\n${screen(target)}`)
			}
			const prefix = `NAMZU_SANDBOX_STATE_DIR=${stateDir} NAMZU_SANDBOX_AGENT_PATH=${env().NAMZU_SANDBOX_AGENT_PATH}`
			const run = `${prefix} ${process.execPath} ${cliBundle.file}`
			tmux(
				'new-session',
				'-d',
				'-s',
				session,
				'-x',
				'120',
				'-y',
				'40',
				`${run} shell --persistent; echo SHELL_EXIT=$?; sleep 60`,
			)
			try {
				const first = `${session}:0`
				await waitFor(first, '#')
				tmux('send-keys', '-t', first, 'echo one-$((6*7)); MARK=kept', 'Enter')
				await waitFor(first, 'one-42')
				tmux('send-keys', '-t', first, 'C-]')
				const detached = await waitFor(first, 'SHELL_EXIT=0')
				const handle = /([0-9a-f]{12}\/session:shell-[0-9a-f]+)/.exec(detached)?.[1]
				if (!handle) throw new Error(`no handle on screen:\n${detached}`)

				// Not an attachment: logs prints the retained output and disturbs nothing.
				const logs = await cli(['logs', handle])
				expect(logs.stdout).toContain('one-42')
				const sessions = await cli(['sessions', handle.split('/')[0] ?? ''])
				expect(sessions.stdout).toContain(handle)

				tmux('new-window', '-t', session, `${run} attach ${handle}; echo ATTACH_EXIT=$?; sleep 60`)
				const second = `${session}:1`
				await waitFor(second, 'one-42')
				tmux('send-keys', '-t', second, 'echo $MARK-again; stty size', 'Enter')
				await waitFor(second, 'kept-again')
				await waitFor(second, '40 120')
				tmux('send-keys', '-t', second, 'exit 3', 'Enter')
				await waitFor(second, 'ATTACH_EXIT=3')
				await cli(['destroy', handle.split('/')[0] ?? ''])
			} finally {
				tmux('kill-session', '-t', session)
			}
		},
	)
})
