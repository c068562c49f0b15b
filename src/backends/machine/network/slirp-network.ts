/**
 * Attaches allow-all networking to a sandbox's network namespace, named by the host pid of a
 * process in it (the thin I/O shell over `egress-network.ts` and `host-address-guard.ts`): start
 * slirp4netns on that namespace, wait for it to report the interface up, then install the guard
 * ruleset inside it. bwrap's sandbox reaches it through `bwrap-network-attach.ts` (its pid from
 * bwrap's info descriptor), a container through its runtime's pid file. Any failure kills
 * slirp4netns and rejects with `LocalNetworkSetupError`; the caller tears the sandbox down. Also
 * the namespace helpers the capture route shares: `nsenter` into it, a bounded command there.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import { startStderrLogKeeper } from '../launch/stderr-log-keeper.js'
import { StderrTail } from '../launch/stderr-tail.js'
import { loopbackReady, type NetworkToolPaths } from './egress-network.js'
import { type HostAddresses, sandboxGuardRuleset } from './host-address-guard.js'
import { LocalNetworkSetupError } from './network-errors.js'

/** The MTU slirp4netns is fastest with (its documented recommendation). */
export const SLIRP_MTU = 65520
export const SANDBOX_TAP = 'tap0'
/** slirp4netns's descriptors: 3 = exit (the sandbox's lifetime), 4 = ready. */
const SLIRP_EXIT_FD = 3
const SLIRP_READY_FD = 4
const LOOPBACK_POLL_MS = 1

export interface SlirpNetwork {
	/** Host pid of the sandbox's init (whose namespaces slirp4netns serves). */
	readonly sandboxPid: number
	readonly slirpPid: number | undefined
	/** Kills slirp4netns (it also exits on its own when the sandbox ends). Idempotent. */
	stop(): Promise<void>
}

/** What attaching slirp4netns to a sandbox's namespace takes, however its pid was learnt. */
export interface SlirpOptions {
	readonly sandboxId: string
	readonly tools: NetworkToolPaths
	readonly hostAddresses: HostAddresses
	/** Moves slirp4netns into the sandbox's own cgroups, so its limits and teardown cover it. */
	readonly join?: (pid: number) => Promise<void>
	/** Kept-alive sandboxes: slirp4netns must not depend on the host (stderr to a file, unref'd). */
	readonly outliveHost?: { readonly stderrPath: string; readonly tailPath?: string }
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}

/** Rejects when `signal` aborts or `ms` pass; `onTimeout` names what was being waited for. */
export function bounded<T>(
	work: Promise<T>,
	ms: number,
	signal: AbortSignal | undefined,
	onTimeout: () => Error,
): Promise<T> {
	let timer: NodeJS.Timeout | undefined
	let onAbort: (() => void) | undefined
	const limits = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(onTimeout()), ms)
		if (signal) {
			onAbort = () => reject(signal.reason)
			if (signal.aborted) onAbort()
			else signal.addEventListener('abort', onAbort, { once: true })
		}
	})
	return Promise.race([work, limits]).finally(() => {
		clearTimeout(timer)
		if (onAbort) signal?.removeEventListener('abort', onAbort)
	})
}

/** Polls the sandbox's `/proc/<pid>/net` until bwrap has configured its loopback. */
export async function waitForLoopback(sandboxPid: number): Promise<void> {
	const read = (name: string) =>
		readFile(`/proc/${sandboxPid}/net/${name}`, 'utf8').catch((error: NodeJS.ErrnoException) => {
			if (error.code === 'ENOENT' && name === 'if_inet6') return undefined
			throw error
		})
	for (;;) {
		const ifInet6 = await read('if_inet6')
		const fibTrie = ifInet6 === undefined ? await read('fib_trie') : undefined
		if (loopbackReady(ifInet6, fibTrie)) return
		await new Promise((resolve) => setTimeout(resolve, LOOPBACK_POLL_MS))
	}
}

function exitOf(child: ChildProcess): Promise<string> {
	return new Promise((resolve) => {
		child.once('error', (error) => resolve(`could not be started (${error.message})`))
		child.once('exit', (code, signal) => resolve(`exited (code ${code}, signal ${signal})`))
	})
}

function killAndWait(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
	if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
	return exited.then(() => undefined)
}

/** `nsenter … --` into the sandbox's network namespace, as root or as the sandbox's own user. */
export function namespaceEntry(
	tools: NetworkToolPaths,
	sandboxPid: number,
	asRoot: boolean,
): string[] {
	const net = `--net=/proc/${sandboxPid}/ns/net`
	// A non-root host enters the sandbox's user namespace, which it owns, for CAP_NET_ADMIN there;
	// its uid must be 0 inside for the program to keep that capability across exec.
	const entry = asRoot
		? [net]
		: [`--user=/proc/${sandboxPid}/ns/user`, net, '--preserve-credentials']
	return [tools.nsenter, ...entry, '--']
}

/** `nsenter … nft -f -` for the sandbox's namespace, as root or as the sandbox's own user. */
export function firewallCommand(
	tools: NetworkToolPaths,
	sandboxPid: number,
	asRoot: boolean,
): string[] {
	return [...namespaceEntry(tools, sandboxPid, asRoot), tools.nft, '-f', '-']
}

export function slirpArguments(sandboxPid: number): string[] {
	return [
		'--configure',
		`--mtu=${SLIRP_MTU}`,
		'--disable-host-loopback',
		// slirp4netns parses hostile packets: keep it in its own empty root with a syscall filter.
		'--enable-sandbox',
		'--enable-seccomp',
		`--exit-fd=${SLIRP_EXIT_FD}`,
		`--ready-fd=${SLIRP_READY_FD}`,
		String(sandboxPid),
		SANDBOX_TAP,
	]
}

/** util-linux's `unshare`, beside `nsenter`. */
export const UNSHARE_PATH = '/usr/bin/unshare'

const isRoot = () => process.getuid?.() === 0

/**
 * slirp4netns's argv. As root it starts in a mount namespace of its own whose mounts are all
 * private: its sandbox makes only `/` private before it pivots and detaches the old root, so a
 * mount shared with the host (iproute2's `/run/netns`) would carry that detach back to the host
 * and unmount every named network namespace there. A non-root host's slirp4netns unshares inside
 * the sandbox's user namespace, where copied shared mounts are slaves already.
 */
export function slirpCommand(slirp4netns: string, sandboxPid: number, asRoot: boolean): string[] {
	const slirp = [slirp4netns, ...slirpArguments(sandboxPid)]
	return asRoot ? [UNSHARE_PATH, '--mount', '--propagation', 'private', '--', ...slirp] : slirp
}

/** A command run in the sandbox's namespace (`namespaceEntry` + program) that must exit 0 in time. */
export interface NamespaceCommand {
	readonly sandboxId: string
	readonly step: LocalNetworkSetupError['step']
	/** Program first. */
	readonly argv: readonly string[]
	/** Written to its stdin, then closed. */
	readonly input?: string
	/** Names the program in failures (`nft`, `nsenter`). */
	readonly label: string
	readonly deadline: number
	readonly signal?: AbortSignal
}

export async function runNamespaceCommand(command: NamespaceCommand): Promise<void> {
	const [program, ...args] = command.argv
	if (program === undefined) return
	const tail = new StderrTail()
	const child = spawn(program, args, {
		stdio: [command.input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
	})
	child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk))
	child.stdin?.on('error', () => undefined)
	if (command.input !== undefined) child.stdin?.end(command.input)
	const exited = exitOf(child)
	const fail = (detail: string) =>
		new LocalNetworkSetupError(command.sandboxId, command.step, detail, tail.read())
	try {
		const how = await bounded(
			exited,
			Math.max(1, command.deadline - Date.now()),
			command.signal,
			() => fail(`${command.label} did not finish in time`),
		)
		if (child.exitCode !== 0) throw fail(`${command.label} ${how}`)
	} catch (error) {
		await killAndWait(child, exited)
		throw error
	}
}

function installFirewall(
	options: Pick<SlirpOptions, 'sandboxId' | 'tools' | 'hostAddresses' | 'signal'>,
	sandboxPid: number,
	deadline: number,
): Promise<void> {
	return runNamespaceCommand({
		sandboxId: options.sandboxId,
		step: 'firewall',
		argv: firewallCommand(options.tools, sandboxPid, process.getuid?.() === 0),
		input: sandboxGuardRuleset(options.hostAddresses),
		label: 'nft',
		deadline,
		...(options.signal ? { signal: options.signal } : {}),
	})
}

export interface StartSlirpOptions extends SlirpOptions {
	/** Host pid of a process in the network namespace to serve (its loopback already up). */
	readonly sandboxPid: number
	/**
	 * What slirp4netns's `--exit-fd` is: the host end of a descriptor the sandbox holds (it exits
	 * with the sandbox), or `'host'` — a pipe only this process holds (it exits with the host).
	 */
	readonly lifetime: Readable | 'host'
}

/**
 * slirp4netns on the network namespace of `sandboxPid`, then the guard ruleset inside it; the one
 * attach both tiers use (bubblewrap's sandbox pid from its info descriptor, a container's from its
 * runtime's pid file).
 */
export async function startSlirpNetwork(options: StartSlirpOptions): Promise<SlirpNetwork> {
	const deadline = Date.now() + options.timeoutMs
	const remaining = () => Math.max(1, deadline - Date.now())
	const { sandboxId, sandboxPid, lifetime } = options
	const tail = new StderrTail()
	// slirp4netns relays the workload's traffic: what it logs is bounded like the sandbox's own stderr.
	const keeper =
		options.outliveHost === undefined
			? undefined
			: startStderrLogKeeper(options.outliveHost.stderrPath, options.outliveHost.tailPath)
	let child: ChildProcess
	try {
		const [file, ...args] = slirpCommand(options.tools.slirp4netns, sandboxPid, isRoot())
		child = spawn(file ?? options.tools.slirp4netns, args, {
			// Its own process group: a terminal's Ctrl-C is for the host program, not for the network.
			detached: true,
			stdio: [
				'ignore',
				'ignore',
				keeper?.input ?? 'pipe',
				lifetime === 'host' ? 'pipe' : lifetime,
				'pipe',
			],
		})
	} finally {
		keeper?.release()
		// slirp4netns holds its own copy; ours would keep nothing alive but a handle in this process.
		if (lifetime !== 'host') lifetime.destroy()
	}
	child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk))
	const exited = exitOf(child)
	const fail = (detail: string, cause?: unknown) =>
		new LocalNetworkSetupError(
			sandboxId,
			'slirp4netns',
			detail,
			tail.read(),
			cause === undefined ? {} : { cause },
		)
	const ready = child.stdio[SLIRP_READY_FD] as Readable | null | undefined
	try {
		if (child.pid !== undefined) await options.join?.(child.pid)
		await bounded(
			new Promise<void>((resolve, reject) => {
				ready?.once('data', () => resolve())
				void exited.then((how) => reject(fail(`slirp4netns ${how} before it was ready`)))
			}),
			remaining(),
			options.signal,
			() => fail(`not ready within ${options.timeoutMs} ms`),
		)
		ready?.destroy()
		await installFirewall(options, sandboxPid, deadline)
	} catch (error) {
		ready?.destroy()
		await killAndWait(child, exited)
		if (error instanceof LocalNetworkSetupError || options.signal?.aborted) throw error
		throw fail(error instanceof Error ? error.message : String(error), error)
	}
	if (options.outliveHost) child.unref()
	let stopping: Promise<void> | undefined
	return {
		sandboxPid,
		slirpPid: child.pid,
		stop: () => {
			stopping ??= killAndWait(child, exited)
			return stopping
		},
	}
}
