/**
 * The one walk along an error's `cause` chain. Every layer that looks past the error it caught
 * (an errno `code` under a dial failure, a refusal class under a wrapper) reads the chain through
 * these two functions, so the bound and the cycle guard are the same everywhere.
 */

/** How many links are followed at most: causes are a handful deep, a longer chain is a loop. */
export const MAX_CAUSE_DEPTH = 8

/**
 * The error itself, then its causes, outermost first: every `Error` on the chain, stopping at the
 * first `cause` that is not an `Error`, at a link already seen, or after `MAX_CAUSE_DEPTH` links.
 */
export function causeChain(error: unknown): readonly Error[] {
	const chain: Error[] = []
	let current: unknown = error
	while (current instanceof Error && chain.length < MAX_CAUSE_DEPTH && !chain.includes(current)) {
		chain.push(current)
		current = current.cause
	}
	return chain
}

/** The first error on the chain (the error itself included) the predicate accepts. */
export function findCause<T extends Error>(
	error: unknown,
	predicate: (candidate: Error) => candidate is T,
): T | undefined
export function findCause(
	error: unknown,
	predicate: (candidate: Error) => boolean,
): Error | undefined
export function findCause(
	error: unknown,
	predicate: (candidate: Error) => boolean,
): Error | undefined {
	return causeChain(error).find(predicate)
}

/** The first error on the chain that is an instance of `type`. */
export function findCauseOfType<T extends Error>(
	error: unknown,
	type: abstract new (...args: never[]) => T,
): T | undefined {
	return findCause(error, (candidate): candidate is T => candidate instanceof type)
}

/** The first string `code` on the chain (`ENOTFOUND`, `ECONNREFUSED`, …), if any carries one. */
export function causeCode(error: unknown): string | undefined {
	for (const link of causeChain(error)) {
		const { code } = link as { readonly code?: unknown }
		if (typeof code === 'string') return code
	}
	return undefined
}
