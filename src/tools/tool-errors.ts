/**
 * What the tools refuse on their own, beside the library's errors they pass through. Each is a
 * `SandboxError` with a kebab-case `reason`; no message carries file content or an argument's
 * value beyond the identifiers the caller chose (a path, an exec id, a tool name).
 */
import { SandboxError } from '../index.js'

/** `edit_file`: `old_string` does not occur in the file. Nothing was written. */
export class EditMatchNotFoundError extends SandboxError<'edit-match-not-found'> {
	override readonly name = 'EditMatchNotFoundError'
	readonly path: string

	constructor(path: string) {
		super(
			`edit_file ${path}: old_string was not found; nothing was written`,
			'edit-match-not-found',
		)
		this.path = path
	}
}

/** `edit_file`: `old_string` occurs more than once and `replace_all` was not set. */
export class EditMatchAmbiguousError extends SandboxError<'edit-match-ambiguous'> {
	override readonly name = 'EditMatchAmbiguousError'
	readonly path: string
	readonly matches: number

	constructor(path: string, matches: number) {
		super(
			`edit_file ${path}: old_string occurs ${matches} times; add context to make it unique or set replace_all; nothing was written`,
			'edit-match-ambiguous',
		)
		this.path = path
		this.matches = matches
	}
}

/** A file a tool reads whole (edit, grep, a line range) is over the tool's byte bound. */
export class ToolFileTooLargeError extends SandboxError<'file-too-large'> {
	override readonly name = 'ToolFileTooLargeError'
	readonly path: string
	readonly limitBytes: number

	constructor(tool: string, path: string, limitBytes: number) {
		super(`${tool} ${path}: the file is larger than ${limitBytes} bytes`, 'file-too-large')
		this.path = path
		this.limitBytes = limitBytes
	}
}

/** The sandbox does not serve what a tool is built on (sessions, `walkFiles`). */
export class ToolUnsupportedError extends SandboxError<'tool-unsupported'> {
	override readonly name = 'ToolUnsupportedError'
	readonly tool: string
	readonly requires: string

	constructor(tool: string, requires: string) {
		super(`${tool}: this sandbox does not offer ${requires}`, 'tool-unsupported')
		this.tool = tool
		this.requires = requires
	}
}

/** A call named a tool that is not in the set. */
export class UnknownToolError extends SandboxError<'unknown-tool'> {
	override readonly name = 'UnknownToolError'
	readonly tool: string

	constructor(tool: string) {
		super(`no tool named ${JSON.stringify(tool.slice(0, 64))}`, 'unknown-tool')
		this.tool = tool
	}
}

/** `exec_write_stdin` on a command started without `tty`: its stdin is closed. */
export class ExecStdinUnavailableError extends SandboxError<'stdin-unavailable'> {
	override readonly name = 'ExecStdinUnavailableError'
	readonly execId: string

	constructor(execId: string) {
		super(
			`exec_write_stdin ${execId}: the command has no stdin (start it with tty: true to write to it)`,
			'stdin-unavailable',
		)
		this.execId = execId
	}
}

/** `grep`'s regular expression ran past its time budget (a pattern that backtracks without end). */
export class GrepPatternTimeoutError extends SandboxError<'grep-pattern-timeout'> {
	override readonly name = 'GrepPatternTimeoutError'
	readonly budgetMs: number

	constructor(budgetMs: number) {
		super(
			`grep: the pattern ran past its ${budgetMs} ms budget; simplify it`,
			'grep-pattern-timeout',
		)
		this.budgetMs = budgetMs
	}
}
