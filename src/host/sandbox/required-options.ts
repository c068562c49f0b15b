/**
 * The options argument the contract marks required (`walkFiles`, `openTerminal`,
 * `openTcpConnection`, `startDetached`) must be an object: anything else is refused by name before
 * a field of it is read, instead of surfacing as `Cannot read properties of undefined`.
 */
import { SandboxArgumentError } from '../../contract/errors.js'
import { isRecord } from '../../wire/is-record.js'

function kindOf(value: unknown): string {
	if (value === null) return 'null'
	if (Array.isArray(value)) return 'an array'
	return typeof value === 'object' ? 'an object' : typeof value
}

/** The refusal of a missing or non-object options argument, or undefined when it is an object. */
export function missingOptions(method: string, options: unknown): SandboxArgumentError | undefined {
	if (isRecord(options)) return undefined
	return new SandboxArgumentError(method, 'options', 'an object', kindOf(options))
}
