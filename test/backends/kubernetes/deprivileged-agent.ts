// Starts the real agent bundle the way a Kubernetes guest runs it: TCP listen mode with a bind
// token, deprivileged by `setpriv` (uid/gid 65534, no capabilities in any set, no_new_privs), so
// the acquire-time privilege probe passes against it. `privileged: true` skips setpriv (the probe
// must then refuse it: these tests run as root).
import { type ChildProcess, spawn } from 'node:child_process'
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentBundlePath } from '../../../src/host/agent-bundle-path.js'

export interface GuestAgent {
	readonly port: number
	readonly workspace: string
	readonly process: ChildProcess
	stop(): Promise<void>
}

export async function startGuestAgent(options: {
	token: string
	privileged?: boolean
}): Promise<GuestAgent> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-k8s-guest-'))
	await chmod(dir, 0o755)
	const workspace = join(dir, 'workspace')
	await mkdir(workspace)
	await chown(workspace, 65_534, 65_534)
	const env = {
		PATH: process.env.PATH ?? '/usr/bin:/bin',
		HOME: workspace,
		NAMZU_SANDBOX_WORKSPACE: workspace,
		NAMZU_AGENT_TCP_PORT: '0',
		NAMZU_AGENT_BIND_TOKEN: options.token,
		NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '2000',
	}
	const node = process.execPath
	const [command, args] = options.privileged
		? [node, [agentBundlePath()]]
		: [
				'setpriv',
				[
					'--reuid=65534',
					'--regid=65534',
					'--clear-groups',
					'--inh-caps=-all',
					'--bounding-set=-all',
					'--no-new-privs',
					'--',
					node,
					agentBundlePath(),
				],
			]
	const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
	let stdout = ''
	let stderr = ''
	child.stderr?.on('data', (chunk: Buffer) => {
		stderr += chunk.toString()
	})
	const port = await new Promise<number>((resolve, reject) => {
		const onExit = (code: number | null) =>
			reject(new Error(`guest agent exited with ${code} before listening: ${stderr}`))
		child.once('exit', onExit)
		child.stdout?.on('data', (chunk: Buffer) => {
			stdout += chunk.toString()
			const match = /listening (\{.*\})/.exec(stdout)
			if (match?.[1]) {
				child.off('exit', onExit)
				resolve((JSON.parse(match[1]) as { port: number }).port)
			}
		})
	})
	return {
		port,
		workspace,
		process: child,
		stop: async () => {
			if (child.exitCode === null && child.signalCode === null) {
				const exited = new Promise((resolve) => child.once('exit', resolve))
				child.kill('SIGKILL')
				await exited
			}
			await rm(dir, { recursive: true, force: true })
		},
	}
}
