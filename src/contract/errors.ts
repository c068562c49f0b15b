/**
 * Base errors of the contract. Every refusal is its own class with `name` set and machine-readable
 * fields; messages never carry secrets.
 */

export interface SandboxErrorOptions {
	readonly cause?: unknown
	readonly retryable?: boolean
}

/**
 * Root of every error this package throws on purpose. Each class names its reasons as a literal
 * type (`extends SandboxError<'destroyed'>`), so a caller's `switch (error.reason)` is checked.
 */
export class SandboxError<Reason extends string = string> extends Error {
	override readonly name: string = 'SandboxError'
	/** Short machine-readable reason (kebab-case), stable across releases. */
	readonly reason: Reason
	/** Whether the same call may succeed if simply tried again. */
	readonly retryable: boolean

	constructor(message: string, reason: Reason, options: SandboxErrorOptions = {}) {
		super(message, options.cause === undefined ? undefined : { cause: options.cause })
		this.reason = reason
		this.retryable = options.retryable ?? false
	}
}

/** Any call on a sandbox after `destroy()`. Names the operation that was refused. */
export class SandboxDestroyedError extends SandboxError<'destroyed'> {
	override readonly name = 'SandboxDestroyedError'
	readonly operation: string
	readonly sandboxId: string

	constructor(sandboxId: string, operation: string) {
		super(`sandbox ${sandboxId} is destroyed; ${operation}() refused`, 'destroyed')
		this.operation = operation
		this.sandboxId = sandboxId
	}
}

/** `createSandboxProvider` was given a backend this build does not implement. */
export class SandboxBackendNotImplementedError extends SandboxError<'backend-not-implemented'> {
	override readonly name = 'SandboxBackendNotImplementedError'
	readonly backend: string

	constructor(backend: string) {
		super(`sandbox backend not implemented: ${backend}`, 'backend-not-implemented')
		this.backend = backend
	}
}

/**
 * A configuration value the backend cannot honour (it never accepts and ignores). Configuration is
 * what a provider, backend or sandbox is set up with: `createSandboxProvider`'s config and backend,
 * the provider defaults, a `create()` config. A bad argument of a call is `SandboxArgumentError`.
 */
export class SandboxConfigError extends SandboxError<'invalid-config'> {
	override readonly name = 'SandboxConfigError'
	readonly field: string
	/** What the field must be, when the refusal is a type or range check. */
	readonly expected?: string
	/** What it was instead (described, never echoed when it could be a secret). */
	readonly received?: string

	constructor(
		field: string,
		message: string,
		check?: { readonly expected: string; readonly received: string },
	) {
		super(`${field}: ${message}`, 'invalid-config')
		this.field = field
		if (check) {
			this.expected = check.expected
			this.received = check.received
		}
	}
}

/**
 * An argument of a call that is of the wrong type, out of range or malformed, refused before
 * anything is dialed, started or written. `parameter` is the path to it (`command`,
 * `options.timeout`, `args[2]`); `received` describes what came (`NaN`, `null`, `a function`, a
 * string cut to 60 characters) and never echoes an environment value or file content.
 */
export class SandboxArgumentError extends SandboxError<'invalid-argument'> {
	override readonly name = 'SandboxArgumentError'
	/** The method refused, e.g. `exec`, `openTerminal`, `openLocalSandbox`. */
	readonly method: string
	readonly parameter: string
	readonly expected: string
	readonly received: string

	constructor(method: string, parameter: string, expected: string, received: string) {
		super(`${method}: ${parameter} must be ${expected}, got ${received}`, 'invalid-argument', {
			retryable: false,
		})
		this.method = method
		this.parameter = parameter
		this.expected = expected
		this.received = received
	}
}

/** A path that would leave the workspace jail (`..`, an absolute escape, or a symlink out). */
export class SandboxPathEscapeError extends SandboxError<'path-escape'> {
	override readonly name = 'SandboxPathEscapeError'
	readonly path: string
	readonly operation: string

	constructor(path: string, operation: string, options: SandboxErrorOptions = {}) {
		super(`${operation}: path escapes the workspace: ${path}`, 'path-escape', options)
		this.path = path
		this.operation = operation
	}
}

/** A file operation the guest refused or failed, with the guest's error code when it gave one. */
export class SandboxFileError extends SandboxError<'file-error'> {
	override readonly name = 'SandboxFileError'
	readonly path: string
	readonly operation: string
	/** e.g. `ENOENT`, `EISDIR`, or a guest refusal such as `read_file_range_too_large`. */
	readonly code: string

	constructor(
		path: string,
		operation: string,
		code: string,
		detail: string,
		options: SandboxErrorOptions = {},
	) {
		super(`${operation} ${path}: ${detail}`, 'file-error', options)
		this.path = path
		this.operation = operation
		this.code = code
	}
}

/** `walkFiles` exhausted its examined-entry budget: never a short list that looks complete. */
export class FileWalkLimitError extends SandboxError<'walk-limit'> {
	override readonly name = 'FileWalkLimitError'
	readonly code = 'ERR_FILE_WALK_LIMIT'
	readonly limit: number

	constructor(limit: number) {
		super(
			`walkFiles examined ${limit} entries without finishing; narrow the pattern or the root, or raise maxVisitedEntries`,
			'walk-limit',
		)
		this.limit = limit
	}
}
