/**
 * Refusals and failures of a bounded file walk (`walkFiles` / `walkFilesViaExec`). Planning errors
 * are thrown before anything runs; the guest-side ones describe a walk that ran but cannot be
 * trusted as complete. `FileWalkLimitError` (budget exhausted) lives in `../errors.ts`.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'

/** The walk root is not an absolute path, or it is (or resolves through) a symbolic link. */
export class FileWalkRootError extends SandboxError<'root-not-absolute' | 'root-is-symlink'> {
	override readonly name = 'FileWalkRootError'
	readonly rootPath: string

	constructor(rootPath: string, reason: 'root-not-absolute' | 'root-is-symlink') {
		super(
			reason === 'root-not-absolute'
				? `walkFiles root must be an absolute path: ${JSON.stringify(rootPath)}`
				: `walkFiles root must not be or pass through a symbolic link: ${JSON.stringify(rootPath)}`,
			reason,
		)
		this.rootPath = rootPath
	}
}

/** Why a walk's glob pattern was refused (the error's `reason`). */
export type FileWalkPatternRefusal =
	| 'pattern-empty'
	| 'pattern-too-long'
	| 'pattern-absolute'
	| 'pattern-parent-segment'
	| 'plan-too-large'

const PATTERN_REFUSAL_TEXT: Readonly<Record<FileWalkPatternRefusal, string>> = {
	'pattern-empty': 'matches nothing (it is empty after normalisation)',
	'pattern-too-long': 'is longer than 4096 characters',
	'pattern-absolute': 'must be relative to the root (no leading "/" or drive letter)',
	'pattern-parent-segment': 'must not contain a ".." segment',
	'plan-too-large': 'expands to more than a guest command line can carry',
}

/** A glob the walk refuses before running. The pattern itself is not echoed (it may be huge). */
export class FileWalkPatternError extends SandboxError<FileWalkPatternRefusal> {
	override readonly name = 'FileWalkPatternError'
	readonly patternLength: number

	constructor(reason: FileWalkPatternRefusal, patternLength: number) {
		super(`walkFiles pattern ${PATTERN_REFUSAL_TEXT[reason]}`, reason)
		this.patternLength = patternLength
	}
}

/** Brace expansion of the pattern would produce more alternatives than the bound allows. */
export class FileWalkBraceLimitError extends SandboxError<'brace-limit'> {
	override readonly name = 'FileWalkBraceLimitError'
	readonly limit: number

	constructor(limit: number) {
		super(`walkFiles pattern expands to more than ${limit} brace alternatives`, 'brace-limit')
		this.limit = limit
	}
}

/** A walk option with a value the walk cannot honour (it never guesses a replacement). */
export class FileWalkOptionError extends SandboxError<'invalid-option'> {
	override readonly name = 'FileWalkOptionError'
	readonly field: string

	constructor(field: string, requirement: string) {
		super(`walkFiles option ${field} ${requirement}`, 'invalid-option')
		this.field = field
	}
}

/** How the guest's walk output broke its format (the error's `violation`). */
export type FileWalkProtocolViolation =
	| 'line-too-long'
	| 'invalid-record'
	| 'path-outside-root'
	| 'invalid-size'
	| 'too-many-entries'
	| 'record-after-end'
	| 'output-truncated'
	| 'missing-done'

/** The guest's walk output broke the record rules, so nothing after it can be trusted. */
export class FileWalkProtocolError extends SandboxError<'walk-protocol'> {
	override readonly name = 'FileWalkProtocolError'
	readonly violation: FileWalkProtocolViolation

	constructor(violation: FileWalkProtocolViolation, detail: string) {
		super(`walkFiles guest output rejected (${violation}): ${detail}`, 'walk-protocol')
		this.violation = violation
	}
}

/** The walk program ran but did not finish cleanly: it failed, timed out or exited non-zero. */
export class FileWalkExecError extends SandboxError<'guest-error' | 'timed-out' | 'exit-code'> {
	override readonly name = 'FileWalkExecError'
	readonly exitCode?: number
	/** The error code the guest program reported, e.g. `EACCES`, when it reported one. */
	readonly guestCode?: string

	constructor(
		reason: 'guest-error' | 'timed-out' | 'exit-code',
		detail: string,
		fields: { readonly exitCode?: number; readonly guestCode?: string } = {},
		options: SandboxErrorOptions = {},
	) {
		super(`walkFiles guest walk failed: ${detail}`, reason, options)
		if (fields.exitCode !== undefined) this.exitCode = fields.exitCode
		if (fields.guestCode !== undefined) this.guestCode = fields.guestCode
	}
}
