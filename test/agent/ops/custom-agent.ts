import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { agentBundlePath } from '../../../src/host/sandbox/agent-bundle-path.js'
import { spawnListening } from '../../helpers/listening-child.js'

/**
 * Starts the real agent in ways the shared helper does not: under another uid, or behind a
 * wrapper command such as `prlimit`. Test-only.
 */
export interface CustomAgent {
	readonly socketPath: string
	readonly workspace: string
	stop(): Promise<void>
}

export interface CustomAgentOptions {
	/** Run as this uid/gid (the workspace and socket directory are handed to it). */
	readonly uid?: number
	/** Argv prepended to `node agent.cjs`, e.g. `['prlimit', '--fsize=65536', '--']`. */
	readonly wrapper?: readonly string[]
}

export async function startCustomAgent(options: CustomAgentOptions = {}): Promise<CustomAgent> {
	const dir = mkdtempSync(join(tmpdir(), 'namzu-agent-custom-'))
	chmodSync(dir, 0o755)
	const workspace = join(dir, 'workspace')
	const sockets = join(dir, 'sockets')
	mkdirSync(workspace)
	mkdirSync(sockets)
	if (options.uid !== undefined) {
		chownSync(workspace, options.uid, options.uid)
		chownSync(sockets, options.uid, options.uid)
	}
	const socketPath = join(sockets, 'agent.sock')
	const argv = [...(options.wrapper ?? []), process.execPath, agentBundlePath()]
	const [command, ...args] = argv
	if (command === undefined) throw new Error('empty argv')
	const { stop } = await spawnListening(
		command,
		args,
		{
			...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
			env: {
				PATH: process.env.PATH ?? '/usr/bin:/bin',
				NAMZU_SANDBOX_WORKSPACE: workspace,
				NAMZU_AGENT_UNIX_PATH: socketPath,
			},
		},
		() => rmSync(dir, { recursive: true, force: true }),
	)
	return { socketPath, workspace, stop }
}
