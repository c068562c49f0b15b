/**
 * The generic shape of a guest refusal: the guest answered an op with `{ ok: false, error }` (or a
 * stream `error` event) and no verb gives the code a more specific error. `refusal` is the answer
 * read into its typed code (`wire/refusals.ts`); `guestError` is the text as it was sent.
 */
import { SandboxError } from '../../contract/errors.js'
import { parseRefusal, type WireRefusal } from '../../wire/refusals.js'

/** The guest answered an op with `{ ok: false, error }` (or a stream `error` event). */
export class AgentOpRefusedError extends SandboxError {
	override readonly name: string = 'AgentOpRefusedError'
	readonly op: string
	/** The guest's error string, e.g. `ENOENT: …` or `unknown_op: …`. */
	readonly guestError: string
	/** The same answer read into its code, detail and fields. */
	readonly refusal: WireRefusal

	constructor(
		op: string,
		guestError: string,
		reason = 'op-refused',
		refusal: WireRefusal = parseRefusal(guestError),
	) {
		super(`guest agent refused ${op}: ${guestError}`, reason)
		this.op = op
		this.guestError = guestError
		this.refusal = refusal
	}
}

/** The guest refused the request's credential (`unauthorized`). */
export class AgentUnauthorizedError extends AgentOpRefusedError {
	override readonly name = 'AgentUnauthorizedError'

	constructor(op: string) {
		super(op, 'unauthorized', 'unauthorized')
	}
}
