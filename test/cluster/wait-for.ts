// Polls a probe until it yields a value (anything but undefined) or the budget runs out. Cluster
// tests wait on controller-driven state this way instead of sleeping for fixed amounts of time.

export class WaitTimeoutError extends Error {
	override readonly name = 'WaitTimeoutError'
	readonly reason = 'timeout'
	readonly retryable = true
	constructor(
		readonly what: string,
		readonly timeoutMs: number,
		readonly lastError?: unknown,
	) {
		super(
			`timed out after ${timeoutMs} ms waiting for ${what}` +
				(lastError instanceof Error ? ` (last error: ${lastError.message})` : ''),
		)
	}
}

export interface WaitOptions {
	readonly timeoutMs?: number
	readonly intervalMs?: number
	readonly signal?: AbortSignal
}

export async function waitFor<T>(
	what: string,
	probe: () => Promise<T | undefined> | T | undefined,
	options: WaitOptions = {},
): Promise<T> {
	const timeoutMs = options.timeoutMs ?? 60_000
	const intervalMs = options.intervalMs ?? 250
	const deadline = Date.now() + timeoutMs
	let lastError: unknown
	for (;;) {
		options.signal?.throwIfAborted()
		try {
			const value = await probe()
			if (value !== undefined) return value
		} catch (error) {
			lastError = error
		}
		if (Date.now() >= deadline) throw new WaitTimeoutError(what, timeoutMs, lastError)
		await new Promise((resolve) => setTimeout(resolve, intervalMs))
	}
}
