/**
 * Starting the real agent for the lifecycle tests: plainly (a child of the test runner, so it
 * narrows a quiesce to `owned-sessions`), or inside a pid namespace of its own the way a pod runs
 * it — `/bin/sh` as the namespace's init and the agent its child (the `tini` → agent shape) — so
 * a quiesce scans the whole namespace. `unshare --kill-child` takes the namespace down with the
 * test. Also: raw request helpers that keep talking to a stopped agent out of the tests.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { isRunning } from '../../helpers/process-running.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'

export interface LifecycleAgent {
	readonly process: ChildProcess
	readonly socketPath: string
	readonly workspace: string
	readonly dir: string
	readonly stderr: () => string
	/** Resolves with the exit once the (outer) process exited. */
	readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
	request(op: string, body?: object, timeoutMs?: number): Promise<Record<string, unknown>>
	stop(): Promise<void>
}

export interface LifecycleAgentOptions {
	readonly env?: Record<string, string>
	/** Run as the child of `/bin/sh`, init of a fresh pid namespace. */
	readonly pidNamespace?: boolean
	/** Replace PATH (default: the runner's). */
	readonly path?: string
	/** pid namespace only: shell code the init runs in the background beside the agent. */
	readonly initPrelude?: string
}

export async function startLifecycleAgent(
	options: LifecycleAgentOptions = {},
): Promise<LifecycleAgent> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-lifecycle-'))
	const workspace = join(dir, 'workspace')
	await mkdir(workspace)
	const socketPath = join(dir, 'agent.sock')
	const env: Record<string, string> = {
		PATH: options.path ?? process.env.PATH ?? '/usr/bin:/bin',
		HOME: dir,
		NAMZU_SANDBOX_WORKSPACE: workspace,
		NAMZU_AGENT_UNIX_PATH: socketPath,
		NAMZU_AGENT_QUIESCE_GRACE_MS: '300',
		NAMZU_AGENT_QUIESCE_SETTLE_MS: '2000',
		...options.env,
	}
	const agentArgv = [process.execPath, agentBundlePath()]
	const [file, args] = options.pidNamespace
		? [
				'/usr/bin/unshare',
				[
					'--pid',
					'--fork',
					'--mount-proc',
					'--kill-child',
					'/bin/sh',
					'-c',
					`${options.initPrelude ? `(${options.initPrelude}) & ` : ''}"$@" & wait $!`,
					'init',
					...agentArgv,
				],
			]
		: [agentArgv[0] ?? process.execPath, agentArgv.slice(1)]
	const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
	let stderr = ''
	let stdout = ''
	child.stderr?.on('data', (chunk: Buffer) => {
		stderr += chunk.toString()
	})
	const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
		child.once('exit', (code, signal) => resolve({ code, signal }))
	})
	const listening = new Promise<void>((resolve, reject) => {
		const onExit = (code: number | null) =>
			reject(new Error(`agent exited with ${code} before listening: ${stderr}`))
		child.once('exit', onExit)
		child.stdout?.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
			if (/listening \{.*\}/.test(stdout)) {
				child.off('exit', onExit)
				resolve()
			}
		})
	})
	// A refused startup leaves nothing behind either.
	await listening.catch(async (error: unknown) => {
		await rm(dir, { recursive: true, force: true })
		throw error
	})
	const request = async (op: string, body?: object, timeoutMs = 20_000) => {
		const exchange = await rawRequest({ socketPath }, body === undefined ? { op } : { op, body }, {
			timeoutMs,
		})
		const [first] = exchange.frames
		if (!first) throw new Error(`${op}: no answer (${exchange.closedBy}); stderr: ${stderr}`)
		return first
	}
	return {
		process: child,
		socketPath,
		workspace,
		dir,
		stderr: () => stderr,
		exited,
		request,
		stop: async () => {
			if (child.exitCode === null && child.signalCode === null) {
				child.kill('SIGKILL')
				await exited
			}
			await rm(dir, { recursive: true, force: true })
		},
	}
}

/** Whether `pid` (in the runner's pid namespace) is alive and not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
	return isRunning(pid)
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms))
}

export async function waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
	const deadline = Date.now() + timeoutMs
	while (!(await predicate())) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await delay(20)
	}
}
