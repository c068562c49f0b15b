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
