/**
 * The path limits both ends enforce: Linux's `PATH_MAX` and `NAME_MAX`, in UTF-8 bytes, and no NUL.
 * The host refuses a path over them before dialing; the agent refuses it again on arrival (it
 * trusts no peer), before any filesystem call. Pure and linear in the path's length, so an
 * over-long path costs one scan however long it is.
 */

/** Longest path accepted, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 4096
/** Longest single component (between two `/`), in UTF-8 bytes. */
export const MAX_PATH_COMPONENT_BYTES = 255

export type PathLimitViolation =
	| { readonly kind: 'contains-nul' }
	| { readonly kind: 'too-long'; readonly bytes: number }
	| { readonly kind: 'component-too-long'; readonly bytes: number }

/** The first limit `path` breaks, or undefined when it is within every limit. */
export function pathLimitViolation(path: string): PathLimitViolation | undefined {
	if (path.includes('\0')) return { kind: 'contains-nul' }
	const bytes = Buffer.byteLength(path, 'utf8')
	if (bytes > MAX_PATH_BYTES) return { kind: 'too-long', bytes }
	let start = 0
	while (start <= path.length) {
		const end = path.indexOf('/', start)
		const stop = end === -1 ? path.length : end
		if (stop - start > 0) {
			const componentBytes = Buffer.byteLength(path.slice(start, stop), 'utf8')
			if (componentBytes > MAX_PATH_COMPONENT_BYTES) {
				return { kind: 'component-too-long', bytes: componentBytes }
			}
		}
		start = stop + 1
	}
	return undefined
}

/** What a path must be to keep `kind`'s limit: the first half of "path must be …, got …". */
export function pathLimitExpectation(kind: PathLimitViolation['kind']): string {
	switch (kind) {
		case 'contains-nul':
			return 'free of NUL bytes'
		case 'too-long':
			return `at most ${MAX_PATH_BYTES} bytes (UTF-8)`
		case 'component-too-long':
			return `made of components of at most ${MAX_PATH_COMPONENT_BYTES} bytes (UTF-8)`
	}
}

/** The violation as the halves of "path must be …, got …", for messages on either end. */
export function describePathLimitViolation(violation: PathLimitViolation): {
	readonly expected: string
	readonly received: string
} {
	const expected = pathLimitExpectation(violation.kind)
	switch (violation.kind) {
		case 'contains-nul':
			return { expected, received: 'a string containing a NUL byte' }
		case 'too-long':
			return { expected, received: `${violation.bytes} bytes` }
		case 'component-too-long':
			return { expected, received: `a component of ${violation.bytes} bytes` }
	}
}
