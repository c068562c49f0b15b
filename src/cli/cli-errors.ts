/**
 * The CLI's own refusal: bad usage (an unknown verb or flag, a flag value the validators refuse).
 * `main` catches it and exits 2 with the usage text; it never leaves the CLI.
 */
import { SandboxError } from '../contract/errors.js'

export class CliUsageError extends SandboxError<'usage'> {
	override readonly name = 'CliUsageError'

	constructor(message: string) {
		super(message, 'usage')
	}
}

/** A command needs an optional dependency that is not installed (exit 1, the fix in the message). */
export class CliDependencyMissingError extends SandboxError<'dependency-missing'> {
	override readonly name = 'CliDependencyMissingError'
	readonly dependency: string

	constructor(command: string, dependency: string) {
		super(
			`${command} needs the optional dependency ${dependency}: npm install ${dependency}`,
			'dependency-missing',
		)
		this.dependency = dependency
	}
}

/** Piped stdin past `MAX_RUN_STDIN_BYTES` (exit 1): the fix is to pass the data as a file. */
export class CliStdinTooLargeError extends SandboxError<'stdin-too-large'> {
	override readonly name = 'CliStdinTooLargeError'
	readonly limitBytes: number

	constructor(limitBytes: number) {
		super(
			`stdin is larger than ${limitBytes} bytes: put the data in the workspace (--workspace DIR) and let the command read the file, or pass --no-stdin`,
			'stdin-too-large',
		)
		this.limitBytes = limitBytes
	}
}

/** `cp`: the source is not there (exit 1), on the host or in the sandbox. */
export class CliPathNotFoundError extends SandboxError<'path-not-found'> {
	override readonly name = 'CliPathNotFoundError'
	readonly path: string
	readonly side: 'host' | 'sandbox'

	constructor(path: string, side: 'host' | 'sandbox') {
		super(
			`${path}: no such file or directory ${side === 'host' ? 'on this host' : 'in the sandbox (relative paths start at its workspace root)'}`,
			'path-not-found',
		)
		this.path = path
		this.side = side
	}
}
