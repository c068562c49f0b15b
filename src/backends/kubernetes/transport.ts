/**
 * How the Kubernetes backend reaches a pod's guest agent: the shared `AgentTransport` over a `tcp`
 * handle (a plain `net.connect` per request with no cached socket or address, the pod uid as bind
 * token in every envelope, the agent's pre-auth ceiling checked before dialing), plus `onTiming`,
 * which hears where each `exec()` of the sandbox built on it spent its time. Package-internal: not
 * exported from the package root nor from this tier's barrel; users reach `onTiming` through
 * `KubernetesBackendConfig.onExecTiming`.
 */

import type { RemoteExecutionTiming } from '../../host/exec/execution-timing.js'
import type { RemoteExecutionControllerOptions } from '../../host/exec/remote-execution-controller.js'
import type { SandboxAgentHandle } from '../../host/transport/agent-handle.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import type { AgentTransportOptions } from '../../host/transport/agent-transport-options.js'

/** The one handle arm this backend constructs. */
export type KubernetesAgentHandle = Extract<SandboxAgentHandle, { readonly kind: 'tcp' }>

export interface KubernetesAgentTransportOptions extends AgentTransportOptions {
	/**
	 * Told after every completed `exec()` its dial, reserve, execute and drain durations (ms), and
	 * nothing else: never the token, the command or any output. Must not throw.
	 */
	readonly onTiming?: (timing: RemoteExecutionTiming) => void
}

export class KubernetesAgentTransport extends AgentTransport {
	readonly #onTiming: ((timing: RemoteExecutionTiming) => void) | undefined

	constructor(handle: KubernetesAgentHandle, options: KubernetesAgentTransportOptions = {}) {
		const { onTiming, ...transportOptions } = options
		// The reserve round trip stays: a kept unconfirmed cancellation is diagnosed against the
		// agent process that accepted the reservation (its boot id), which an `execute` that
		// reserves its own id does not report.
		super(handle, {
			...transportOptions,
			executeReserves: transportOptions.executeReserves ?? false,
		})
		this.#onTiming = onTiming
	}

	/** Follows a replaced pod: its address and its uid as the new token. */
	override rebind(handle: KubernetesAgentHandle): void {
		super.rebind(handle)
	}

	/**
	 * The execution-controller options of the sandbox built on this transport: each `exec()`'s
	 * timing is copied field by field to `onTiming`, so the payload is the four numbers exactly.
	 */
	get executionOptions(): Pick<RemoteExecutionControllerOptions, 'onTiming'> {
		const onTiming = this.#onTiming
		if (!onTiming) return {}
		return {
			onTiming: ({ dialMs, reserveMs, executeMs, drainMs }) =>
				onTiming({ dialMs, reserveMs, executeMs, drainMs }),
		}
	}
}
