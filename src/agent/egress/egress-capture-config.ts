/**
 * Whether the agent runs the egress capture helper, from its environment: the captured ports
 * (`NAMZU_AGENT_EGRESS_PORTS`) and where the host's proxy is (`NAMZU_AGENT_EGRESS_SOCKET`): an
 * absolute unix socket path (bubblewrap, containers: a bind-mounted socket) or an IPv4
 * `address:port` (a microVM: the host's forward on the guest's user-mode network). Neither set: no
 * helper. One without the other, a bad port or a bad address refuses to start.
 */
import {
	EGRESS_PORTS_VARIABLE,
	EGRESS_SOCKET_VARIABLE,
	ipv4Value,
} from '../../wire/egress-bridge.js'
import { AgentConfigError } from '../handler/config-error.js'

export interface EgressProxyAddress {
	readonly host: string
	readonly port: number
}

export interface EgressCaptureConfig {
	readonly ports: readonly number[]
	/** The proxy's unix socket; absent when it is reached at `proxyAddress`. */
	readonly socketPath?: string
	/** The proxy at an IPv4 address and port; absent when it is reached at `socketPath`. */
	readonly proxyAddress?: EgressProxyAddress
}

function parsePort(text: string): number | undefined {
	const port = Number(text)
	return /^[1-9][0-9]{0,4}$/.test(text) && port <= 65_535 ? port : undefined
}

function proxyAddressOf(text: string): EgressProxyAddress | undefined {
	const colon = text.lastIndexOf(':')
	const host = text.slice(0, colon)
	const port = parsePort(text.slice(colon + 1))
	return colon > 0 && ipv4Value(host) !== undefined && port !== undefined
		? { host, port }
		: undefined
}

export function loadEgressCaptureConfig(
	env: Readonly<Record<string, string | undefined>>,
): EgressCaptureConfig | undefined {
	const ports = env[EGRESS_PORTS_VARIABLE]
	const bridge = env[EGRESS_SOCKET_VARIABLE]
	if (ports === undefined && bridge === undefined) return undefined
	const proxyAddress = bridge === undefined ? undefined : proxyAddressOf(bridge)
	if (!ports || (!bridge?.startsWith('/') && proxyAddress === undefined)) {
		throw new AgentConfigError(
			`${EGRESS_PORTS_VARIABLE} and ${EGRESS_SOCKET_VARIABLE} (an absolute path or an IPv4 address:port) go together`,
		)
	}
	const list = ports.split(',').map((text) => {
		const port = parsePort(text)
		if (port === undefined) {
			throw new AgentConfigError(`${EGRESS_PORTS_VARIABLE}: ${JSON.stringify(text)} is not a port`)
		}
		return port
	})
	const unique = [...new Set(list)]
	return proxyAddress === undefined
		? { ports: unique, socketPath: bridge }
		: { ports: unique, proxyAddress }
}
