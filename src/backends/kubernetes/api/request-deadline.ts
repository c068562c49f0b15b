/**
 * One request's bound: a signal that aborts when `timeoutMs` expires or when the caller's own
 * signal aborts, whichever is first, and which of the two it was. Armed on every request, with or
 * without a caller signal; `dispose()` clears the timer and the listener.
 */

export interface RequestDeadline {
	/** Aborts at the bound or with the caller's signal. */
	readonly signal: AbortSignal
	/** True once the bound (not the caller) fired. */
	expired(): boolean
	dispose(): void
}

export function armRequestDeadline(timeoutMs: number, callerSignal?: AbortSignal): RequestDeadline {
	const controller = new AbortController()
	let expired = false
	const onCallerAbort = (): void => controller.abort(callerSignal?.reason)
	const timer = setTimeout(() => {
		expired = true
		controller.abort(new Error(`request bound of ${timeoutMs} ms expired`))
	}, timeoutMs)
	if (callerSignal?.aborted) onCallerAbort()
	else callerSignal?.addEventListener('abort', onCallerAbort, { once: true })
	return {
		signal: controller.signal,
		expired: () => expired,
		dispose: () => {
			clearTimeout(timer)
			callerSignal?.removeEventListener('abort', onCallerAbort)
		},
	}
}
