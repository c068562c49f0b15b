/**
 * `allow-all` egress of one QEMU guest, through the machine layer's allow-all of the other tiers
 * (slirp4netns and the host-address guard, `startSlirpNetwork`), not a copy:
 *
 * - The VMM runs in a network namespace of its own (and a mount namespace, for its resolver file),
 *   made by `unshare` as it starts; its loopback is brought up before QEMU binds its forward there.
 * - The guest's NIC is QEMU's user-mode network without `restrict`: QEMU turns each guest flow into
 *   a socket of its own, in that namespace. The namespace's one way out is slirp4netns, attached by
 *   the host once the VMM runs, with the guard's ruleset inside it: the host's own addresses,
 *   slirp4netns's gateway alias 10.0.2.2, link-local (cloud metadata at 169.254.169.254), 0.0.0.0/8
 *   and IPv6 are refused, as on the local and container tiers.
 * - QEMU's own 10.0.2.2 alias is its host's loopback: here the namespace's, where nothing listens
 *   but the VMM's forward to this guest's own agent (which asks for the boot's token) — never the
 *   host's loopback services. The guest's 10.0.2.3 is QEMU's DNS forwarder, which asks the
 *   resolver the namespace's resolv.conf names: slirp4netns's forwarder (the same file as the
 *   other tiers' sandboxes get).
 * - QEMU starts without CAP_NET_ADMIN and CAP_SYS_ADMIN (a bounding-set drop): a guest that took
 *   over the VMM could neither rewrite the guard nor enter another namespace.
 * - The host reaches the agent through a relay (`stream-relay.ts`) that runs in the VMM's
 *   namespace on a listening socket the host made on its own 127.0.0.1: the transport dials that
 *   port with the boot's token, exactly as under `deny-all`.
 *
 * Nothing runs inside the guest before the host's first request, which waits for all of this: no
 * workload can connect before the guard is in place.
 */
import { constants, readFileSync } from 'node:fs'
import { access, readlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import { type LaunchedAgentProcess, launchAgentProcess } from '../machine/launch/agent-launcher.js'
import { createInheritableLoopbackListenSocket } from '../machine/launch/agent-listen-socket.js'
import { debianInstallCommand } from '../machine/launch/install-hint.js'
import {
	ALLOW_ALL_RESOLV_CONF,
	DEFAULT_NETWORK_TOOLS,
	missingNetworkTools,
	readHostAddresses,
	resolvConfTarget,
} from '../machine/network/egress-network.js'
import {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
	type MissingNetworkTool,
} from '../machine/network/network-errors.js'
import {
	bounded,
	namespaceEntry,
	type SlirpNetwork,
	startSlirpNetwork,
	waitForLoopback,
} from '../machine/network/slirp-network.js'
import { type FwCfgFile, GUEST_AGENT_PORT } from './qemu-argv.js'
import { RELAY_PERL, writeStreamRelay } from './stream-relay.js'
import { DETACH_UNKEPT_LOOP_MOUNTS, loopMountsToKeep, pathsInArgv } from './vmm-namespace-mounts.js'

/** The fw_cfg file whose presence tells the guest's init to route through 10.0.2.2 and use it. */
export const ALLOW_ALL_RESOLV_FW_CFG = 'opt/namzu/allow-all-resolv.conf'
/** Where QEMU's forward to the agent listens inside the VMM's namespace (nothing else is there). */
export const VMM_NAMESPACE_AGENT_PORT = GUEST_AGENT_PORT
const NAMESPACE_POLL_MS = 5
/** The tools it needs beyond QEMU: the machine layer's allow-all set, `ip` for the loopback. */
const NEEDED_TOOLS = ['slirp4netns', 'nft', 'nsenter', 'ip'] as const

/**
 * The shell between `unshare` and QEMU, in the new namespaces: loopback up, the resolver file over
 * the host's, the loop mounts QEMU does not read through detached (`vmm-namespace-mounts.ts`), then
 * QEMU with the two capabilities dropped. `$1` is `ip`, `$2` the resolver file, `$3` where the
 * host's resolv.conf really is (empty: none), `$4` the loop mounts to keep (one per line), the
 * rest QEMU's argv.
 */
export const VMM_NAMESPACE_SCRIPT = [
	DETACH_UNKEPT_LOOP_MOUNTS,
	'"$1" link set lo up || exit 125',
	'{ [ -z "$3" ] || mount --bind "$2" "$3"; } || exit 125',
	'namzu_detach_loops "$4"',
	'shift 4',
	'exec setpriv --bounding-set -net_admin,-sys_admin -- "$@"',
].join('\n')

export interface GuestOpenNetwork {
	/** The port on the host's 127.0.0.1 the transport dials (the relay's listener). */
	readonly hostPort: number
	/** QEMU's forward inside the VMM's namespace (`qemuArgv`'s `hostPort`). */
	readonly vmmPort: number
	readonly fwCfgFiles: readonly FwCfgFile[]
	/** QEMU's argv, started in fresh network and mount namespaces (`VMM_NAMESPACE_SCRIPT`). */
	wrap(qemuArgv: readonly string[]): string[]
	/** Once the VMM runs: slirp4netns and the guard on its namespace, then the relay. */
	attach(input: AttachOpenNetwork): Promise<void>
	/** Whether the relay has ended (the agent can no longer be reached: no dial is retried). */
	relayExited(): boolean
	/** Ends the relay and slirp4netns and closes the listener. Idempotent. */
	close(): Promise<void>
}

export interface AttachOpenNetwork {
	readonly vmm: LaunchedAgentProcess
	/** The VMM's cgroups: slirp4netns and the relay live and die with them. */
	readonly procsFiles: readonly string[]
	readonly join?: (pid: number) => Promise<void>
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}

const asRoot = () => process.getuid?.() === 0

/** What allow-all needs here and this host lacks (empty: it can be set up); `doctor` reads it. */
export async function missingOpenNetworkTools(): Promise<MissingNetworkTool[]> {
	const missing = await missingNetworkTools(DEFAULT_NETWORK_TOOLS, asRoot(), NEEDED_TOOLS)
	try {
		await access(RELAY_PERL, constants.X_OK)
	} catch {
		const fix = debianInstallCommand('perl-base')
		missing.push({ tool: 'perl', path: RELAY_PERL, fix, debianPackage: 'perl-base' })
	}
	return missing
}

/** Refuses by name, before anything starts, when a tool allow-all needs is missing here. */
async function assertOpenNetworkUsable(): Promise<void> {
	const missing = await missingOpenNetworkTools()
	if (missing.length > 0) throw new LocalNetworkUnavailableError(missing)
}

/** The namespace QEMU runs in, once `unshare` made it and loopback is up. */
async function vmmNamespaceReady(
	sandboxId: string,
	vmm: LaunchedAgentProcess,
	timeoutMs: number,
	signal: AbortSignal | undefined,
): Promise<number> {
	const pid = vmm.pid
	const fail = (detail: string, cause?: unknown) =>
		new LocalNetworkSetupError(sandboxId, 'namespace', detail, vmm.stderrTail(), {
			...(cause === undefined ? {} : { cause }),
		})
	if (pid === undefined) throw fail('the VMM did not start')
	const own = await readlink('/proc/self/ns/net')
	const unshared = async () => {
		// Until `unshare` has run, the pid is still in this process's namespace.
		while ((await readlink(`/proc/${pid}/ns/net`)) === own) {
			if (vmm.exitStatus() !== undefined) throw fail('the VMM exited before its namespace existed')
			await sleep(NAMESPACE_POLL_MS)
		}
		await waitForLoopback(pid)
	}
	await bounded(
		unshared().catch((error: unknown) => {
			throw error instanceof LocalNetworkSetupError ? error : fail('the VMM exited early', error)
		}),
		timeoutMs,
		signal,
		() => fail(`the VMM's namespace was not ready within ${timeoutMs} ms`),
	)
	return pid
}

/**
 * The relay in the VMM's namespace (`nsenter`), on the host's listening socket as descriptor 3,
 * joining each connection to QEMU's forward there; in the VMM's cgroups, dying with the host.
 */
function launchRelay(
	dir: string,
	relayScript: string,
	vmmPid: number,
	procsFiles: readonly string[],
	listenFd: number,
): LaunchedAgentProcess {
	return launchAgentProcess({
		argv: withCgroupJoin(procsFiles, [
			'setpriv',
			'--pdeathsig',
			'KILL',
			'--',
			...namespaceEntry(DEFAULT_NETWORK_TOOLS, vmmPid, asRoot()),
			RELAY_PERL,
			relayScript,
			'--listen-fd3',
			`tcp:127.0.0.1:${VMM_NAMESPACE_AGENT_PORT}`,
		]),
		env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
		cwd: dir,
		secrets: [],
		listenFd,
	})
}

export async function prepareGuestOpenNetwork(input: {
	readonly sandboxId: string
	/** The guest's private directory (0700), removed at destroy. */
	readonly dir: string
}): Promise<GuestOpenNetwork> {
	await assertOpenNetworkUsable()
	const resolvConf = join(input.dir, 'allow-all-resolv.conf')
	await writeFile(resolvConf, ALLOW_ALL_RESOLV_CONF, { mode: 0o644 })
	const relayScript = await writeStreamRelay(input.dir)
	const resolvTarget = (await resolvConfTarget()) ?? ''
	// The guard refuses what the host has at create time, as on the other tiers.
	const hostAddresses = readHostAddresses()
	const tools = DEFAULT_NETWORK_TOOLS
	const listener = await createInheritableLoopbackListenSocket()
	let slirp: SlirpNetwork | undefined
	let relay: LaunchedAgentProcess | undefined
	let closing: Promise<void> | undefined
	const close = async () => {
		await relay?.kill()
		await slirp?.stop()
		await listener.close()
	}
	return {
		hostPort: listener.port,
		vmmPort: VMM_NAMESPACE_AGENT_PORT,
		fwCfgFiles: [{ name: ALLOW_ALL_RESOLV_FW_CFG, file: resolvConf }],
		wrap: (qemuArgv) => [
			'unshare',
			...(asRoot() ? [] : ['--user', '--map-root-user']),
			'--net',
			'--mount',
			'--',
			'/bin/sh',
			'-c',
			VMM_NAMESPACE_SCRIPT,
			'namzu-vmm-net',
			tools.ip,
			resolvConf,
			resolvTarget,
			loopMountsToKeep(readFileSync('/proc/self/mountinfo', 'utf8'), [
				input.dir,
				resolvTarget,
				...pathsInArgv(qemuArgv),
			]).join('\n'),
			...qemuArgv,
		],
		attach: async (attach) => {
			const deadline = Date.now() + attach.timeoutMs
			const remaining = () => Math.max(1, deadline - Date.now())
			const pid = await vmmNamespaceReady(input.sandboxId, attach.vmm, remaining(), attach.signal)
			slirp = await startSlirpNetwork({
				sandboxId: input.sandboxId,
				sandboxPid: pid,
				tools,
				hostAddresses,
				lifetime: 'host',
				...(attach.join ? { join: attach.join } : {}),
				timeoutMs: remaining(),
				...(attach.signal ? { signal: attach.signal } : {}),
			})
			relay = launchRelay(input.dir, relayScript, pid, attach.procsFiles, listener.fd)
			// The relay holds the socket now: only it accepts.
			await listener.close()
		},
		relayExited: () => relay?.exitStatus() !== undefined,
		close: () => {
			closing ??= close()
			return closing
		},
	}
}
