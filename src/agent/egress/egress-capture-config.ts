/**
 * Whether the agent runs the egress capture helper, from its environment: the captured ports
 * (`NAMZU_AGENT_EGRESS_PORTS`) and the proxy's socket (`NAMZU_AGENT_EGRESS_SOCKET`). Neither set:
 * no helper. One without the other, or a bad port, refuses to start.
 */
import { EGRESS_PORTS_VARIABLE, EGRESS_SOCKET_VARIABLE } from '../../wire/egress-bridge.js'
import { AgentConfigError } from '../handler/config-error.js'

export interface EgressCaptureConfig {
	readonly ports: readonly number[]
	readonly socketPath: string
}

export function loadEgressCaptureConfig(
	env: Readonly<Record<string, string | undefined>>,
): EgressCaptureConfig | undefined {
	const ports = env[EGRESS_PORTS_VARIABLE]
	const socketPath = env[EGRESS_SOCKET_VARIABLE]
	if (ports === undefined && socketPath === undefined) return undefined
	if (!ports || !socketPath?.startsWith('/')) {
		throw new AgentConfigError(
			`${EGRESS_PORTS_VARIABLE} and ${EGRESS_SOCKET_VARIABLE} (absolute) go together`,
		)
	}
	const list = ports.split(',').map((text) => {
		const port = Number(text)
		if (!/^[1-9][0-9]{0,4}$/.test(text) || port > 65_535) {
			throw new AgentConfigError(`${EGRESS_PORTS_VARIABLE}: ${JSON.stringify(text)} is not a port`)
		}
		return port
	})
	return { ports: [...new Set(list)], socketPath }
}
