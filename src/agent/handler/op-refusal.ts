/**
 * A refusal a handler throws; the connection layer answers `{ ok: false, error }` in the op's shape
 * (request-shaped replies also carry `message` when one was given).
 */
export class OpRefusal extends Error {
	override readonly name: string = 'OpRefusal'
	readonly error: string
	/** Extra human-readable detail, sent as `message` only when given explicitly. */
	readonly detail?: string

	constructor(error: string, message?: string) {
		super(message ?? error)
		this.error = error
		if (message !== undefined) this.detail = message
	}
}
