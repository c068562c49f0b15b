/**
 * Maps a guest's file-op refusal onto the contract's errors: a jail refusal
 * (`path_escapes_workspace`) becomes `SandboxPathEscapeError`, anything else `SandboxFileError`
 * with the guest's leading code (`ENOENT`, `read_file_range_too_large`, …). Transport failures
 * and credential refusals pass through unchanged.
 */
import {
	type SandboxError,
	SandboxFileError,
	SandboxPathEscapeError,
} from '../../contract/errors.js'
import { AgentOpRefusedError, AgentUnauthorizedError } from '../transport/transport-errors.js'

/** True for the guest's jail refusals, whatever their exact prefix. */
export function isPathEscapeRefusal(guestError: string): boolean {
	return (
		guestError.startsWith('path_escapes_workspace') ||
		guestError.startsWith('path_escape') ||
		guestError.includes('escapes the workspace')
	)
}

/** The leading code of a guest error string: `ENOENT: no such file` ⇒ `ENOENT`. */
export function guestErrorCode(guestError: string): string {
	return /^[A-Za-z_][A-Za-z0-9_]*/.exec(guestError)?.[0] ?? 'EIO'
}

export function fileRefusalError(
	operation: string,
	path: string,
	guestError: string,
	cause?: unknown,
): SandboxError {
	const options = cause === undefined ? {} : { cause }
	if (isPathEscapeRefusal(guestError)) return new SandboxPathEscapeError(path, operation, options)
	return new SandboxFileError(path, operation, guestErrorCode(guestError), guestError, options)
}

/** A thrown op refusal as the contract error for `operation` on `path`; anything else unchanged. */
export function asFileError(operation: string, path: string, error: unknown): unknown {
	if (error instanceof AgentOpRefusedError && !(error instanceof AgentUnauthorizedError)) {
		return fileRefusalError(operation, path, error.guestError, error)
	}
	return error
}
