/**
 * What a sandbox's network is, per egress kind. Every sandbox gets its own network namespace:
 *
 * - `deny-all`: loopback only, no route anywhere (bwrap's `--unshare-net`, nothing else).
 * - `allow-all`: slirp4netns attached by the host to the sandbox's namespace (user-mode TCP/UDP
 *   relayed through the host's sockets), host loopback disabled, an nftables ruleset inside that
 *   refuses every address of the host (`host-address-guard.ts`), and a resolv.conf naming slirp's
 *   DNS forwarder bound where `/etc/resolv.conf` leads (`sandbox-confinement.ts`, in the root plan).
 *
 * The tools each kind needs and their check, the resolver files, the host's addresses and the
 * namespace's loopback, for every tier on this machine; how bwrap hands over its namespace is
 * `backends/local/bwrap-network.ts`.
 */
import { constants } from 'node:fs'
import { access, realpath } from 'node:fs/promises'
import { networkInterfaces } from 'node:os'
import { debianInstallCommand } from '../launch/install-hint.js'
import type { MachineEgress } from '../spec/machine-sandbox-spec.js'
import { type HostAddresses, hostAddressesFrom, SLIRP_DNS } from './host-address-guard.js'
import { LocalNetworkUnavailableError, type MissingNetworkTool } from './network-errors.js'

export interface NetworkToolPaths {
	readonly slirp4netns: string
	readonly nft: string
	readonly nsenter: string
	/** iproute2's `ip`: the proxied kinds' capture route. */
	readonly ip: string
}

export const DEFAULT_NETWORK_TOOLS: NetworkToolPaths = {
	slirp4netns: '/usr/bin/slirp4netns',
	nft: '/usr/sbin/nft',
	nsenter: '/usr/bin/nsenter',
	ip: '/usr/sbin/ip',
}

const PACKAGES: Readonly<Record<keyof NetworkToolPaths, string>> = {
	slirp4netns: 'slirp4netns',
	nft: 'nftables',
	nsenter: 'util-linux',
	ip: 'iproute2',
}

/** slirp4netns opens it inside the sandbox's user namespace, i.e. with no privilege on a non-root host. */
export const TUN_DEVICE = '/dev/net/tun'

/** The resolver configuration an allow-all sandbox sees: slirp's forwarder, nothing of the host's. */
export const ALLOW_ALL_RESOLV_CONF = `nameserver ${SLIRP_DNS}\n`

/** What a `static` / `resolver` sandbox sees: the capture helper's DNS stub on its own loopback. */
export const PROXIED_RESOLV_CONF = 'nameserver 127.0.0.1\noptions attempts:2 timeout:2\n'

/** Inside the state root: the resolver configuration an allow-all sandbox sees. */
export const ALLOW_ALL_RESOLV_CONF_NAME = 'resolv.conf'

/** Which tools of `tools` are not usable (an empty list: allow-all can be set up). */
export async function missingNetworkTools(
	tools: NetworkToolPaths,
	asRoot = process.getuid?.() === 0,
	needed: readonly (keyof NetworkToolPaths)[] = ['slirp4netns', 'nft', 'nsenter'],
): Promise<MissingNetworkTool[]> {
	const missing: MissingNetworkTool[] = []
	for (const tool of needed) {
		try {
			await access(tools[tool], constants.X_OK)
		} catch {
			const fix = `${debianInstallCommand(PACKAGES[tool])}, or point backend.tools.${tool} at it`
			missing.push({ tool, path: tools[tool], fix, debianPackage: PACKAGES[tool] })
		}
	}
	if (!asRoot && needed.includes('slirp4netns')) {
		try {
			await access(TUN_DEVICE, constants.R_OK | constants.W_OK)
		} catch {
			const fix = `chmod 0666 ${TUN_DEVICE} (its usual mode; this user cannot open it), or run as root`
			missing.push({ tool: 'tun', path: TUN_DEVICE, fix })
		}
	}
	return missing
}

/**
 * Refuses `allow-all` or a proxied kind by name when a tool it needs is missing; `deny-all` needs
 * none of them, a proxied kind only `nsenter` and `ip` (for its capture route).
 */
export async function assertNetworkUsable(
	egress: MachineEgress,
	tools: NetworkToolPaths,
): Promise<void> {
	if (egress === 'deny-all') return
	const needed = egress === 'allow-all' ? undefined : (['nsenter', 'ip'] as const)
	const missing = await missingNetworkTools(tools, undefined, needed)
	if (missing.length > 0) throw new LocalNetworkUnavailableError(missing)
}

/**
 * Where `/etc/resolv.conf` really is (it may be a symlink into /run, which the sandbox replaces
 * with its own tmpfs), if the host has one.
 */
export async function resolvConfTarget(): Promise<string | undefined> {
	try {
		return await realpath('/etc/resolv.conf')
	} catch {
		return undefined
	}
}

/** Every address of every interface of the host, read now (both families). */
export function readHostAddresses(): HostAddresses {
	const addresses: string[] = []
	for (const entries of Object.values(networkInterfaces())) {
		for (const entry of entries ?? []) addresses.push(entry.address)
	}
	return hostAddressesFrom(addresses)
}

/**
 * Whether the loopback of a network namespace is configured and up, from its `/proc/<pid>/net`
 * files: `::1` on `lo` in `if_inet6` (present once `lo` is up), else — IPv6 disabled — a
 * `127.0.0.1` entry in `fib_trie`.
 */
export function loopbackReady(ifInet6: string | undefined, fibTrie: string | undefined): boolean {
	if (ifInet6 !== undefined) {
		return ifInet6.split('\n').some((line) => /^0{31}1 .*\slo$/.test(line.trim()))
	}
	return fibTrie?.includes('127.0.0.1') ?? false
}
