import { RemoteControlTimeoutError } from './exec-errors.js'

/**
 * Runs a control request (reserve, cancel, attach set-up) under its own `timeoutMs` and, when given,
 * the caller's signal. Running out of time rejects with `RemoteControlTimeoutError`; a caller abort
 * keeps the caller's reason, so an abort never reads as a timeout.
 */
export async function boundedControlRequest<T>(
	operation: string,
	timeoutMs: number,
	caller: AbortSignal | undefined,
	request: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
	const timeout = new AbortController()
	const timer = setTimeout(
		() => timeout.abort(new RemoteControlTimeoutError(operation, timeoutMs)),
		timeoutMs,
	)
	const signal = caller ? AbortSignal.any([timeout.signal, caller]) : timeout.signal
	try {
		return await request(signal)
	} catch (error) {
		if (timeout.signal.aborted && !caller?.aborted) {
			throw new RemoteControlTimeoutError(operation, timeoutMs, { cause: error })
		}
		throw error
	} finally {
		clearTimeout(timer)
	}
}
