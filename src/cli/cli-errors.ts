/**
 * The CLI's own refusal: bad usage (an unknown verb or flag, a flag value the validators refuse).
 * `main` catches it and exits 2 with the usage text; it never leaves the CLI.
 */
import { SandboxError } from '../contract/errors.js'

export class CliUsageError extends SandboxError {
	override readonly name = 'CliUsageError'

	constructor(message: string) {
		super(message, 'usage')
	}
}

/** A command needs an optional dependency that is not installed (exit 1, the fix in the message). */
export class CliDependencyMissingError extends SandboxError {
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
