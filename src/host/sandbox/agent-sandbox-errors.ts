/**
 * Refusals of the agent-backed `Sandbox` itself (as opposed to its transport): a handle fenced
 * after an unconfirmable cancellation, and a tcp target that is not guest loopback.
 */
import { SandboxError } from '../../contract/errors.js'

/** Any call on a sandbox that was retired because a cancellation could not be confirmed. */
export class SandboxRetiredError extends SandboxError<'retired'> {
	override readonly name = 'SandboxRetiredError'
	readonly sandboxId: string
	readonly operation: string

	constructor(sandboxId: string, operation: string) {
		super(
			`sandbox ${sandboxId} was retired after a cancellation could not be confirmed; ${operation}() refused`,
			'retired',
		)
		this.sandboxId = sandboxId
		this.operation = operation
	}
}

/** `openTcpConnection` to anything but the guest's loopback, refused on the host before dialing. */
export class SandboxTcpTargetRefusedError extends SandboxError<'tcp-target-refused'> {
	override readonly name = 'SandboxTcpTargetRefusedError'
	readonly host: string
	readonly port: number

	constructor(host: string, port: number, detail: string) {
		super(`openTcpConnection ${host}:${port} refused: ${detail}`, 'tcp-target-refused')
		this.host = host
		this.port = port
	}
}

export const LOOPBACK_TCP_HOSTS: readonly string[] = ['127.0.0.1', '::1']

/** Why a tcp target is refused, or undefined when it is a valid guest-loopback target. */
export function tcpTargetRefusal(host: string, port: number): string | undefined {
	if (!LOOPBACK_TCP_HOSTS.includes(host))
		return 'only 127.0.0.1 and ::1 (guest loopback) are allowed'
	if (!Number.isInteger(port) || port < 1 || port > 65535) return 'port must be an integer 1..65535'
	return undefined
}
