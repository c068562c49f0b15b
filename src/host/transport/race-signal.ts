/**
 * `work`, or a rejection with the signal's reason the moment it aborts (the work itself is left to
 * finish on its own). Without a signal, `work` unchanged. The listener is always removed on settle,
 * so a long-lived signal does not collect listeners.
 */
export function raceSignal<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
	if (!signal) return work
	if (signal.aborted) return Promise.reject(signal.reason)
	return new Promise<T>((resolve, reject) => {
		const onAbort = (): void => reject(signal.reason)
		signal.addEventListener('abort', onAbort, { once: true })
		work.then(
			(value) => {
				signal.removeEventListener('abort', onAbort)
				resolve(value)
			},
			(error: unknown) => {
				signal.removeEventListener('abort', onAbort)
				reject(error)
			},
		)
	})
}
