/** The one refusal `exposePort` raises itself (its arguments are `SandboxArgumentError`s). */
import { SandboxError } from '../../contract/errors.js'

/** The host would not let the exposure listen on its loopback (descriptors used up, …). */
export class PortExposureListenError extends SandboxError<'port-exposure-listen-failed'> {
	override readonly name = 'PortExposureListenError'
	readonly port: number

	constructor(port: number, cause: unknown) {
		super(
			`exposePort(${port}): the host refused a listener on 127.0.0.1 (${cause instanceof Error ? cause.message : String(cause)}); free descriptors or ports and retry`,
			'port-exposure-listen-failed',
			{ cause, retryable: true },
		)
		this.port = port
	}
}
