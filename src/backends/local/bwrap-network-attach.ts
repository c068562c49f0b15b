/**
 * Attaches a sandbox bwrap has just started to its network: read the sandbox's pid from bwrap's
 * info descriptor once its loopback is up, then hand the namespace to the machine layer's one
 * attach — slirp4netns and the guard for `allow-all` (`slirp-network.ts`), the capture route and
 * the wait for the capture helper for `static` / `resolver` (`proxied-network.ts`). Any failure
 * rejects with `LocalNetworkSetupError`; the caller tears the sandbox down.
 */
import type { Readable } from 'node:stream'
import { type NetworkToolPaths, readHostAddresses } from '../machine/network/egress-network.js'
import { LocalNetworkSetupError } from '../machine/network/network-errors.js'
import { setCaptureRoute, waitForCaptureHelper } from '../machine/network/proxied-network.js'
import {
	bounded,
	type SlirpNetwork,
	type SlirpOptions,
	startSlirpNetwork,
	waitForLoopback,
} from '../machine/network/slirp-network.js'
import { allowAllBwrapArgs, allowAllFds, parseBwrapInfo } from './bwrap-network.js'

export interface AttachSlirpOptions extends SlirpOptions {
	/** The host end of bwrap's `--info-fd`. */
	readonly info: Readable
	/** The host end of the socket pair whose other end bwrap holds as `--sync-fd`. */
	readonly lifetime: Readable
}

/** The sandbox pid from bwrap's info JSON (bwrap writes it once the namespaces exist). */
function readSandboxPid(info: Readable): Promise<number> {
	return new Promise((resolve, reject) => {
		let text = ''
		const done = (error?: Error, pid?: number) => {
			info.removeAllListeners('data')
			info.destroy()
			if (pid !== undefined) resolve(pid)
			else reject(error)
		}
		info.on('data', (chunk: Buffer) => {
			text += chunk.toString('utf8')
			const pid = parseBwrapInfo(text)
			if (pid !== undefined) done(undefined, pid)
			else if (text.length > 64 * 1024) done(new Error('bwrap info is not the expected JSON'))
		})
		info.once('error', (error) => done(error))
		info.once('end', () => done(new Error('bwrap closed its info descriptor without a pid')))
	})
}

/**
 * The sandbox's pid from bwrap's info descriptor, once its loopback is up: bwrap reports the pid
 * before its child has set up loopback, and configuring the namespace earlier races it (slirp4netns
 * bringing `lo` up makes bwrap fail with "loopback: Failed RTM_NEWADDR").
 */
export async function sandboxPidOnceLoopbackUp(
	info: Readable,
	sandboxId: string,
	remaining: () => number,
	signal: AbortSignal | undefined,
): Promise<number> {
	const sandboxPid = await bounded(
		readSandboxPid(info).catch((error: unknown) => {
			const detail = error instanceof Error ? error.message : String(error)
			throw new LocalNetworkSetupError(sandboxId, 'namespace', detail, '', { cause: error })
		}),
		remaining(),
		signal,
		() => new LocalNetworkSetupError(sandboxId, 'namespace', 'bwrap reported no pid', ''),
	)
	await bounded(
		waitForLoopback(sandboxPid).catch((error: unknown) => {
			const detail = 'the sandbox exited before its loopback was up'
			throw new LocalNetworkSetupError(sandboxId, 'namespace', detail, '', { cause: error })
		}),
		remaining(),
		signal,
		() => new LocalNetworkSetupError(sandboxId, 'namespace', 'loopback never came up', ''),
	)
	return sandboxPid
}

export async function attachSlirpNetwork(options: AttachSlirpOptions): Promise<SlirpNetwork> {
	const deadline = Date.now() + options.timeoutMs
	const remaining = () => Math.max(1, deadline - Date.now())
	const { info, ...rest } = options
	const sandboxPid = await sandboxPidOnceLoopbackUp(
		info,
		options.sandboxId,
		remaining,
		options.signal,
	)
	return startSlirpNetwork({ ...rest, sandboxPid, timeoutMs: remaining() })
}

/** What the launcher needs to give bwrap allow-all networking, and the step that attaches it. */
export interface PreparedAllowAll {
	/** `extraFds` entries for the launcher: the info pipe and the lifetime pipe. */
	readonly extraFds: readonly 'pipe'[]
	readonly bwrapArgs: readonly string[]
	/** Attaches slirp4netns once bwrap runs, given the launcher's pipes by child fd. */
	attach(
		pipes: ReadonlyMap<number, Readable>,
		options: Omit<AttachSlirpOptions, 'info' | 'lifetime' | 'hostAddresses'>,
	): Promise<SlirpNetwork>
}

/**
 * Plans the descriptors bwrap gets, starting at `firstFd`. The host's addresses are read now: the
 * guard refuses what the host has at create time.
 */
export function prepareAllowAll(firstFd: number): PreparedAllowAll {
	const fds = allowAllFds(firstFd)
	const hostAddresses = readHostAddresses()
	return {
		extraFds: ['pipe', 'pipe'],
		bwrapArgs: allowAllBwrapArgs(fds),
		attach: (pipes, options) => {
			const info = pipes.get(fds.infoFd)
			const lifetime = pipes.get(fds.syncFd)
			if (!info || !lifetime) {
				return Promise.reject(
					new LocalNetworkSetupError(options.sandboxId, 'namespace', 'bwrap pipes missing', ''),
				)
			}
			return attachSlirpNetwork({ ...options, info, lifetime, hostAddresses })
		},
	}
}

export interface AttachProxiedOptions {
	readonly sandboxId: string
	readonly tools: NetworkToolPaths
	/** The host end of bwrap's `--info-fd`. */
	readonly info: Readable
	readonly ports: readonly number[]
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}

export interface ProxiedNetwork {
	readonly sandboxPid: number
	/** Nothing runs on the host for it (the proxy is closed by its owner). */
	stop(): Promise<void>
}

export async function attachProxiedNetwork(options: AttachProxiedOptions): Promise<ProxiedNetwork> {
	const deadline = Date.now() + options.timeoutMs
	const remaining = () => Math.max(1, deadline - Date.now())
	const { sandboxId } = options
	const pid = await sandboxPidOnceLoopbackUp(options.info, sandboxId, remaining, options.signal)
	await setCaptureRoute({ ...options, sandboxPid: pid, timeoutMs: remaining() })
	await waitForCaptureHelper({ ...options, sandboxPid: pid, timeoutMs: remaining() })
	return { sandboxPid: pid, stop: async () => undefined }
}

/** What the launcher needs for a proxied network, and the step that attaches it. */
export interface PreparedProxiedNetwork {
	readonly extraFds: readonly 'pipe'[]
	readonly bwrapArgs: readonly string[]
	attach(
		pipes: ReadonlyMap<number, Readable>,
		options: Omit<AttachProxiedOptions, 'info'>,
	): Promise<ProxiedNetwork>
}

/** bwrap reports the sandbox's pid on `--info-fd firstFd` (after the agent's own descriptors). */
export function prepareProxiedNetwork(firstFd: number): PreparedProxiedNetwork {
	return {
		extraFds: ['pipe'],
		bwrapArgs: ['--info-fd', String(firstFd)],
		attach: (pipes, options) => {
			const info = pipes.get(firstFd)
			if (!info) {
				return Promise.reject(
					new LocalNetworkSetupError(options.sandboxId, 'namespace', 'bwrap pipes missing', ''),
				)
			}
			return attachProxiedNetwork({ ...options, info })
		},
	}
}
