// For `promise.then(unexpected, asRejection)`: the error a call rejected with, typed for
// assertions; a call that resolves fails the test instead.
export type Rejection = Error & Record<string, unknown>

export function unexpected(): never {
	throw new Error('expected a rejection, the call resolved')
}

export function asRejection(error: unknown): Rejection {
	return error as Rejection
}
