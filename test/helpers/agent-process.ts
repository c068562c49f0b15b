import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentBundlePath } from '../../src/host/sandbox/agent-bundle-path.js'
import { rawRequest } from './raw-agent-client.js'

export interface StartedAgent {
	readonly process: ChildProcess
	/** Unix socket path (unix mode) — undefined in tcp mode. */
	readonly socketPath?: string
	/** Bound TCP port (tcp mode). */
	readonly port?: number
	readonly workspace: string
	readonly dir: string
	readonly stderr: () => string
	stop(): Promise<void>
}

export interface StartAgentOptions {
	/** Extra environment; `NAMZU_SANDBOX_WORKSPACE` and the listen mode are set unless given. */
	readonly env?: Record<string, string>
	/** `unix` (default) or `tcp` (ephemeral port, read from the agent's stdout line). */
	readonly mode?: 'unix' | 'tcp'
	/** Descriptors handed to the agent at 3, 4, … (e.g. one it was not told about). */
	readonly extraStdio?: readonly ('ignore' | number)[]
	/** Run in the agent's directory before it starts (e.g. to occupy its socket path). */
	readonly beforeStart?: (dir: string) => Promise<void>
	/** Called once the agent is spawned, before it listens, with its stderr so far. */
	readonly onStarting?: (stderr: () => string) => void
}

/**
 * Starts the real bundled agent (dist/agent.cjs) as a child process on a fresh workspace and waits
 * until `healthz` answers. The agent prints `listening <json>` on stdout once bound.
 */
export async function startAgent(options: StartAgentOptions = {}): Promise<StartedAgent> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-agent-test-'))
	const workspace = join(dir, 'workspace')
	await import('node:fs/promises').then((fs) => fs.mkdir(workspace))
	const mode = options.mode ?? 'unix'
	const socketPath = mode === 'unix' ? join(dir, 'agent.sock') : undefined
	const env: Record<string, string> = {
		PATH: process.env.PATH ?? '/usr/bin:/bin',
		HOME: dir,
		NAMZU_SANDBOX_WORKSPACE: workspace,
		...(socketPath ? { NAMZU_AGENT_UNIX_PATH: socketPath } : { NAMZU_AGENT_TCP_PORT: '0' }),
		...options.env,
	}
	await options.beforeStart?.(dir)
	const child = spawn(process.execPath, [agentBundlePath()], {
		env,
		stdio: ['ignore', 'pipe', 'pipe', ...(options.extraStdio ?? [])],
	})
	let stderr = ''
	let stdout = ''
	child.stderr?.on('data', (chunk: Buffer) => {
		stderr += chunk.toString()
	})
	options.onStarting?.(() => stderr)
	// An agent that refuses to start (a test of that) leaves nothing behind either.
	const port = await new Promise<number | undefined>((resolve, reject) => {
		const onExit = (code: number | null) =>
			reject(new Error(`agent exited with ${code} before listening: ${stderr}`))
		child.once('exit', onExit)
		child.stdout?.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
			const match = /listening (\{.*\})/.exec(stdout)
			if (match?.[1]) {
				child.off('exit', onExit)
				const info = JSON.parse(match[1]) as { port?: number }
				resolve(info.port)
			}
		})
	}).catch(async (error: unknown) => {
		await rm(dir, { recursive: true, force: true })
		throw error
	})
	const stop = async () => {
		if (child.exitCode === null && child.signalCode === null) {
			const exited = new Promise((resolve) => child.once('exit', resolve))
			child.kill('SIGKILL')
			await exited
		}
		await rm(dir, { recursive: true, force: true })
	}
	const started: StartedAgent = {
		process: child,
		...(socketPath ? { socketPath } : {}),
		...(port === undefined ? {} : { port }),
		workspace,
		dir,
		stderr: () => stderr,
		stop,
	}
	await rawRequest(started, { op: 'healthz' })
	return started
}
