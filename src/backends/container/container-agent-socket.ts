/**
 * How the host reaches a container's agent: its environment when it binds a path of its own
 * (gVisor), the move of that socket into the host-only control directory, and the view of a
 * created container the ready wait reads as a launched agent.
 */
import { lstat, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { pollUntil } from '../../common/poll-until.js'
import type { LaunchedAgentProcess } from '../machine/launch/agent-launcher.js'
import { LocalSandboxStartError } from '../machine/machine-errors.js'
import type { CreatedContainer } from './container-process.js'
import { CONTAINER_SOCKET_PATH } from './oci-config.js'

/** The socket's name in the agent's own directory, where the agent binds it (gVisor, Docker). */
export const AGENT_SOCKET_NAME = 'agent.sock'

/** The agent's own environment, listening on `CONTAINER_SOCKET_PATH` and inheriting nothing. */
export function listeningOnPath(env: Readonly<Record<string, string>>): Record<string, string> {
	const { NAMZU_AGENT_VSOCK_PORT: _port, ...rest } = env
	return { ...rest, NAMZU_AGENT_UNIX_PATH: CONTAINER_SOCKET_PATH, NAMZU_AGENT_INHERITED_FDS: '' }
}

/** What the socket wait reads of the container it waits on: whether it is gone, and its output. */
export interface SocketWaitTarget {
	readonly gone: () => boolean
	readonly outputTail: () => string | Promise<string>
}

/**
 * Waits for the agent's socket to appear in its directory, then moves it into the host-only
 * control directory before anything of the workload can run: the host never dials a path the
 * sandbox can write (a symlink planted there would point the host at any socket of its own).
 * Both container runtimes (an OCI runtime driven directly, a Docker engine) wait with this.
 */
export async function adoptAgentSocket(
	from: string,
	to: string,
	target: SocketWaitTarget,
	options: {
		readonly sandboxId: string
		readonly timeoutMs: number
		readonly signal?: AbortSignal
	},
): Promise<void> {
	let found: 'moved' | 'other' | undefined
	const appeared = await pollUntil(async () => {
		options.signal?.throwIfAborted()
		found = await moveSocket(from, to)
		return found !== undefined || target.gone()
	}, performance.now() + options.timeoutMs)
	if (appeared && found === 'moved') return
	throw new LocalSandboxStartError(
		options.sandboxId,
		found === 'other'
			? `${from} is not a socket`
			: target.gone()
				? 'the container exited before its agent bound its socket'
				: `the agent bound no socket within ${options.timeoutMs} ms`,
		{ stderrTail: await target.outputTail() },
	)
}

/**
 * Moves `from` into place at `to` when it is a socket (never a symlink or anything else the
 * sandbox could plant there); answers what was found.
 */
export async function moveSocket(from: string, to: string): Promise<'moved' | 'other' | undefined> {
	const info = await lstat(from).catch(() => undefined)
	if (info === undefined) return undefined
	if (!info.isSocket()) return 'other'
	await rename(from, to)
	return 'moved'
}

/** One `healthz` attempt on an adopted socket before a newer one in the agent's directory is looked for. */
const HEALTHZ_ATTEMPT_MS = 2_000

/**
 * `healthz` on the adopted socket, in short attempts; between them a newer socket at `from`
 * replaces it. gVisor has failed an agent's bind (EACCES) after making its file, on a cold start
 * and right after a restore: the host adopted a socket nothing listens on, while the agent's retry
 * bound a new one in its directory.
 */
export async function healthzOrNewerSocket(
	healthz: (signal: AbortSignal) => Promise<unknown>,
	from: string,
	to: string,
	readySignal: AbortSignal,
): Promise<void> {
	for (;;) {
		const attempt = AbortSignal.any([readySignal, AbortSignal.timeout(HEALTHZ_ATTEMPT_MS)])
		try {
			await healthz(attempt)
			return
		} catch (error) {
			if (readySignal.aborted) throw error
			await moveSocket(from, to)
		}
	}
}

/**
 * The ready wait's check of a container's agent: `healthz`, and where the agent binds a path of
 * its own (gVisor, `socketDir`), a newer socket adopted between attempts.
 */
export function agentReadyCheck(
	transport: { healthz(signal: AbortSignal): Promise<unknown> },
	socketDir: string | undefined,
	socketPath: string,
): (readySignal: AbortSignal) => Promise<unknown> {
	const healthz = (signal: AbortSignal) => transport.healthz(signal)
	if (socketDir === undefined) return healthz
	return (readySignal) =>
		healthzOrNewerSocket(healthz, join(socketDir, AGENT_SOCKET_NAME), socketPath, readySignal)
}

/** What the ready wait reads of a launched agent, for a container (no runtime process is kept). */
export function asLaunched(created: CreatedContainer, pid: number): LaunchedAgentProcess {
	const exited = created.gone.then(() => ({ code: null, signal: null }))
	return {
		pid,
		exited,
		pipes: new Map(),
		exitStatus: () => (created.isGone() ? { code: null, signal: null } : undefined),
		stderrTail: () => created.outputTail(),
		kill: async () => undefined,
	}
}
