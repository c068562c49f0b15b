/**
 * `static` / `resolver` egress of one guest, through the machine layer's egress proxy of the other
 * tiers (`startSandboxEgressProxy`), not a copy. The proxy listens on a unix socket in the guest's
 * private directory (0700: no other host user reaches it, or the credentials it injects). The
 * guest reaches it only through QEMU's `guestfwd` on its restricted user-mode network: every
 * connection of the guest to `GUEST_EGRESS_PROXY_ADDRESS:GUEST_EGRESS_PROXY_PORT` spawns one
 * relay process (`stream-relay.ts`) that joins that connection to the proxy's socket, so
 * connections are served concurrently (a chardev guestfwd serves one stream for the VMM's life).
 * The guest's init routes every other address to the agent's capture helper, which speaks the
 * proxy's bridge there; the proxy decides everything, as on the other tiers.
 */
import { access, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pollUntil } from '../../common/poll-until.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import {
	EGRESS_CA_CERT_NAME,
	EGRESS_PROXY_SOCKET_NAME,
	EGRESS_SOCKET_VARIABLE,
} from '../../wire/egress-bridge.js'
import { PROXIED_RESOLV_CONF, readHostAddresses } from '../machine/network/egress-network.js'
import { LocalNetworkSetupError } from '../machine/network/network-errors.js'
import { boundUdpPorts, listeningTcpPorts } from '../machine/network/proxied-network.js'
import {
	EGRESS_BRIDGE_DIR_NAME,
	type EgressTestSeam,
	type SandboxEgressProxy,
	startSandboxEgressProxy,
} from '../machine/network/sandbox-egress-proxy.js'
import type { ProxiedEgress } from '../machine/spec/machine-sandbox-spec.js'
import { MicroVMServiceUnavailableError } from './microvm-errors.js'
import type { FwCfgFile } from './qemu-argv.js'
import { RELAY_PERL, writeStreamRelay } from './stream-relay.js'

/** Where the guest finds the egress proxy: an address on QEMU's user-mode /24 that slirp owns. */
export const GUEST_EGRESS_PROXY_ADDRESS = '10.0.2.100'
export const GUEST_EGRESS_PROXY_PORT = 3128
/** Where the guest's init puts the CA it is given (the same directory as the other tiers'). */
const GUEST_EGRESS_CA = `/run/namzu-egress/${EGRESS_CA_CERT_NAME}`

export interface GuestEgress {
	/** The netdev's `guestfwd=` value (QEMU option escaping is `qemu-argv.ts`'s). */
	readonly guestfwd: string
	/** fw_cfg files for the guest's init: the resolver file (its signal to route), the CA. */
	readonly fwCfgFiles: readonly FwCfgFile[]
	/** `NAMZU_AGENT_EGRESS_*`: the capture helper, bridged to the forward's address. */
	readonly agentSettings: Readonly<Record<string, string>>
	/** For the workload: the CA as node and OpenSSL find it, when there are credentials. */
	readonly workloadEnv: Readonly<Record<string, string>>
	/** The TCP ports the capture helper listens on (`NAMZU_AGENT_EGRESS_PORTS`). */
	readonly ports: readonly number[]
	readonly onDecision: SandboxEgressProxy['onDecision']
	close(): Promise<void>
}

export interface GuestEgressInput {
	readonly sandboxId: string
	/** The guest's private directory (0700), removed at destroy. */
	readonly dir: string
	readonly egress: ProxiedEgress
	readonly timeoutMs: number
	readonly signal?: AbortSignal
	readonly seam?: EgressTestSeam
}

/** A single-quoted word for the argv QEMU's slirp parses (`g_shell_parse_argv`). */
function shellWord(text: string): string {
	return `'${text.replaceAll("'", "'\\''")}'`
}

/** The sandbox's egress proxy on a socket in `dir`, and what the guest is given to reach it. */
export async function startGuestEgress(input: GuestEgressInput): Promise<GuestEgress> {
	await access(RELAY_PERL).catch((cause: unknown) => {
		throw new MicroVMServiceUnavailableError(
			'qemu',
			`'static' / 'resolver' egress joins the guest to its proxy with ${RELAY_PERL}: install perl-base`,
			{ cause },
		)
	})
	const relay = await writeStreamRelay(input.dir)
	const resolvConf = join(input.dir, 'egress-resolv.conf')
	await writeFile(resolvConf, PROXIED_RESOLV_CONF, { mode: 0o600 })
	const bridgeDir = join(input.dir, EGRESS_BRIDGE_DIR_NAME)
	// The proxy makes its socket 0666 (for a sandbox uid elsewhere): this directory keeps it the VMM's.
	await mkdir(bridgeDir, { mode: 0o700 })
	const proxy = await startSandboxEgressProxy({
		sandboxId: input.sandboxId,
		stateRoot: input.dir,
		egress: input.egress,
		hostAddresses: readHostAddresses(),
		timeoutMs: input.timeoutMs,
		...(input.signal ? { signal: input.signal } : {}),
		...(input.seam ? { seam: input.seam } : {}),
	})
	const socket = join(bridgeDir, EGRESS_PROXY_SOCKET_NAME)
	const credentials = proxy.proxy.caCertificatePem !== undefined
	const command = [RELAY_PERL, relay, `unix:${socket}`].map(shellWord).join(' ')
	return {
		guestfwd: `tcp:${GUEST_EGRESS_PROXY_ADDRESS}:${GUEST_EGRESS_PROXY_PORT}-cmd:${command}`,
		fwCfgFiles: [
			{ name: 'opt/namzu/egress-resolv.conf', file: resolvConf },
			...(credentials
				? [{ name: 'opt/namzu/egress-ca.pem', file: join(bridgeDir, EGRESS_CA_CERT_NAME) }]
				: []),
		],
		agentSettings: {
			...proxy.agentSettings,
			[EGRESS_SOCKET_VARIABLE]: `${GUEST_EGRESS_PROXY_ADDRESS}:${GUEST_EGRESS_PROXY_PORT}`,
		},
		// The guest's root has no system trust bundle: OpenSSL's is the CA alone.
		workloadEnv: credentials
			? {
					...proxy.workloadEnv,
					NODE_EXTRA_CA_CERTS: GUEST_EGRESS_CA,
					SSL_CERT_FILE: GUEST_EGRESS_CA,
				}
			: proxy.workloadEnv,
		ports: proxy.ports,
		onDecision: proxy.onDecision,
		close: () => proxy.close(),
	}
}

const UDP_MARK = '--udp--'

/**
 * Resolves once the agent's capture helper listens on every captured port and on DNS: the check
 * of the other tiers (`proxied-network.ts`'s table parsers), over the guest's own `/proc/net`
 * tables read through the agent, since the host cannot read a guest's. Until then a connect would
 * find nothing listening.
 */
export async function waitForGuestCaptureHelper(input: {
	readonly sandboxId: string
	readonly transport: AgentTransport
	readonly rootDir: string
	readonly ports: readonly number[]
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}): Promise<void> {
	const probe = createAgentSandbox({
		id: input.sandboxId,
		transport: input.transport,
		rootDir: input.rootDir,
		environment: 'linux-namespace',
		release: async () => undefined,
	})
	const script = `cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; echo ${UDP_MARK}; cat /proc/net/udp`
	const listening = async () => {
		const { stdout } = await probe.exec('sh', ['-c', script], {
			...(input.signal ? { signal: input.signal } : {}),
		})
		const [tcp = '', udp = ''] = stdout.split(UDP_MARK)
		const open = listeningTcpPorts(tcp)
		return input.ports.every((port) => open.has(port)) && boundUdpPorts(udp).has(53)
	}
	try {
		if (!(await pollUntil(listening, performance.now() + input.timeoutMs))) {
			throw new LocalNetworkSetupError(
				input.sandboxId,
				'capture-helper',
				`the guest's capture helper did not listen on ports ${input.ports.join(', ')} and DNS in time`,
				'',
			)
		}
	} finally {
		await probe.destroy().catch(() => undefined)
	}
}
