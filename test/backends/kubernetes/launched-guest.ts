// Starts the real agent bundle in TCP token mode under a launcher the test chooses: the stock
// setpriv chain (deprivileged-agent.ts), none (a privileged guest), uid 0 with no effective
// capabilities but the full bounding set, optionally with a `cat` that is missing or hangs (a PATH
// entry placed first) or extra agent variables. The launcher is the argv prefix before
// `node agent.cjs`.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'

/** The image's chain: uid/gid 65534, no groups, every capability set emptied, no_new_privs. */
export const SETPRIV_CHAIN: readonly string[] = [
	'setpriv',
	'--reuid=65534',
	'--regid=65534',
	'--clear-groups',
	'--inh-caps=-all',
	'--bounding-set=-all',
	'--no-new-privs',
	'--',
]

/** uid 0 kept, but `noroot` securebits: no capability is granted on exec, the bounding set stays full. */
export const ROOT_WITHOUT_EFFECTIVE_CAPS: readonly string[] = [
	'setpriv',
	'--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked',
	'--inh-caps=-all',
	'--no-new-privs',
	'--',
]

export interface LaunchedGuest {
	readonly port: number
	readonly workspace: string
	readonly process: ChildProcess
	stop(): Promise<void>
}

export interface LaunchOptions {
	readonly token: string
	readonly launcher: readonly string[]
	/** Shell scripts installed as commands in a PATH entry ahead of the system's (`cat` → body). */
	readonly commands?: Readonly<Record<string, string>>
	readonly env?: Readonly<Record<string, string>>
	/** False: the guest's PATH is only the `commands` entry (an image without coreutils). */
	readonly systemPath?: boolean
}

/** A launcher command as an absolute path, looked up on this process's PATH. */
function absolute(command: string): string {
	if (command.startsWith('/')) return command
	return execFileSync('sh', ['-c', 'command -v "$0"', command], { encoding: 'utf8' }).trim()
}

export async function launchGuestAgent(options: LaunchOptions): Promise<LaunchedGuest> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-k8s-launched-'))
	await chmod(dir, 0o755)
	const workspace = join(dir, 'workspace')
	await mkdir(workspace)
	await chown(workspace, 65_534, 65_534)
	const bin = join(dir, 'bin')
	await mkdir(bin)
	await chmod(bin, 0o755)
	for (const [name, body] of Object.entries(options.commands ?? {})) {
		await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 })
	}
	const env = {
		PATH: options.systemPath === false ? bin : `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
		HOME: workspace,
		NAMZU_SANDBOX_WORKSPACE: workspace,
		NAMZU_AGENT_TCP_PORT: '0',
		NAMZU_AGENT_BIND_TOKEN: options.token,
		NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '2000',
		...options.env,
	}
	const [command, ...args] = [...options.launcher, process.execPath, agentBundlePath()]
	const child = spawn(absolute(command ?? process.execPath), args, {
		env,
		stdio: ['ignore', 'pipe', 'pipe'],
	})
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
