/**
 * A guest that broke the protocol: a reply, acknowledgement or stream the wire does not allow, or
 * more bytes than the host asked for or was told to expect. The host names it and stops reading;
 * it never buffers on the guest's word.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'

/** A reservation, acknowledgement or stream the peer sent that breaks the protocol. */
export class RemoteProtocolError extends SandboxError {
	override readonly name: string = 'RemoteProtocolError'

	constructor(message: string, options: SandboxErrorOptions = {}) {
		super(message, 'protocol-error', options)
	}
}

/**
 * The guest sent a byte count the host did not ask for: more than the requested length, more than
 * it announced, or a count that contradicts the bytes it sent.
 */
export class RemoteByteCountError extends RemoteProtocolError {
	override readonly name = 'RemoteByteCountError'
	/** The wire op the count broke (`read-file`, `read-file-stream`, `attach-session`, …). */
	readonly op: string
	/** The most the host accepts here (the requested length, or the announced size). */
	readonly expectedBytes: number
	/** What the guest sent, or claimed, when the host stopped reading. */
	readonly receivedBytes: number

	constructor(op: string, what: string, expectedBytes: number, receivedBytes: number) {
		super(`${op}: ${what}: expected at most ${expectedBytes} bytes, received ${receivedBytes}`)
		this.op = op
		this.expectedBytes = expectedBytes
		this.receivedBytes = receivedBytes
	}
}
