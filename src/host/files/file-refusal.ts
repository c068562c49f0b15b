/**
 * A guest's file-op refusal as the contract's errors, through the one table
 * (`../refusals/refusal-to-error.ts`): `path_escapes_workspace` becomes `SandboxPathEscapeError`,
 * a path over the wire's limits `SandboxArgumentError` naming the parameter, anything else
 * `SandboxFileError` with the guest's leading code (`ENOENT`, `read_file_range_too_large`, …).
 * Transport failures and credential refusals pass through.
 */
import type { WireRefusal } from '../../wire/refusals.js'
import { AgentOpRefusedError, AgentUnauthorizedError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'

/** The parameter each file verb names its path with, as its argument check does. */
function pathParameter(operation: string): string {
	return operation === 'listFiles' ? 'rootPath' : 'path'
}

export function fileRefusalError(
	operation: string,
	op: string,
	path: string,
	refusal: WireRefusal,
	cause?: unknown,
): Error {
	return refusalToError('file', refusal, {
		op,
		operation,
		path,
		parameter: pathParameter(operation),
		...(cause === undefined ? {} : { cause }),
	})
}

/** A thrown op refusal as the contract error for `operation` on `path`; anything else unchanged. */
export function asFileError(operation: string, path: string, error: unknown): unknown {
	if (error instanceof AgentOpRefusedError && !(error instanceof AgentUnauthorizedError)) {
		return fileRefusalError(operation, error.op, path, error.refusal, error)
	}
	return error
}
