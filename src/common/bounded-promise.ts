/**
 * The two ways this package waits for a promise without waiting forever: within a time bound
 * (`settleWithin`) or until a signal aborts (`raceSignal`). Either way the work itself is left to
 * finish on its own, and the timer or listener is always removed once the race is decided.
 */

export interface SettleWithinOptions {
	/** false: the bound does not keep the process alive on its own (a best-effort wait at exit). */
	readonly ref?: boolean
}

/** `promise`'s value if it settles within `ms`, else undefined (a rejection passes through). */
export async function settleWithin<T>(
	promise: Promise<T>,
	ms: number,
	options: SettleWithinOptions = {},
): Promise<T | undefined> {
	let timer: NodeJS.Timeout | undefined
	const expired = new Promise<undefined>((resolve) => {
		timer = setTimeout(() => resolve(undefined), ms)
		if (options.ref === false) timer.unref()
	})
	try {
		return await Promise.race([promise, expired])
	} finally {
		clearTimeout(timer)
	}
}

/**
 * `work`, or a rejection with the signal's reason the moment it aborts. Without a signal, `work`
 * unchanged. The listener is always removed on settle, so a long-lived signal does not collect
 * listeners.
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
