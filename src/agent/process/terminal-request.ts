/**
 * Everything about a `terminal` request that needs no process (pure): validation, the util-linux
 * `script` command line, and the allow-listed kill signals.
 */

import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { MAX_TERMINAL_DIMENSION } from '../../wire/terminal-size.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn, isStringArray, isStringRecord } from '../handler/value-checks.js'

export const SCRIPT_PATH = '/usr/bin/script'
export const STTY_PATH = '/usr/bin/stty'
export const DEFAULT_TERMINAL_COMMAND = '/bin/sh'

export interface TerminalSize {
	readonly cols: number
	readonly rows: number
}

export interface TerminalSpec extends TerminalSize {
	readonly command: string
	readonly args: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
}

function isDimension(value: unknown): value is number {
	return isIntegerIn(value, { min: 1, max: MAX_TERMINAL_DIMENSION })
}

export function parseTerminalSize(message: Record<string, unknown>): TerminalSize {
	const { cols, rows } = message
	if (!isDimension(cols) || !isDimension(rows)) {
		throw new OpRefusal(
			AGENT_REFUSAL.invalid_terminal_size,
			`cols and rows must be integers 1..${MAX_TERMINAL_DIMENSION}`,
		)
	}
	return { cols, rows }
}

export function parseTerminalRequest(body: Record<string, unknown>): TerminalSpec {
	const size = parseTerminalSize(body)
	const { command, args, cwd, env } = body
	if (command !== undefined && (typeof command !== 'string' || command === '')) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_terminal_command)
	}
	if (args !== undefined && !isStringArray(args))
		throw new OpRefusal(AGENT_REFUSAL.invalid_terminal_args)
	if (env !== undefined && !isStringRecord(env))
		throw new OpRefusal(AGENT_REFUSAL.invalid_terminal_env)
	if (cwd !== undefined && typeof cwd !== 'string') throw new OpRefusal(AGENT_REFUSAL.invalid_cwd)
	return {
		...size,
		command: command ?? DEFAULT_TERMINAL_COMMAND,
		args: args ?? [],
		...(cwd === undefined ? {} : { cwd }),
		...(env === undefined ? {} : { env }),
	}
}

/** POSIX single-quoting: every byte literal, `'` spelled `'\''`. */
export function shellQuote(word: string): string {
	return `'${word.replaceAll("'", "'\\''")}'`
}

/** Argv for `script`: a PTY around `exec <command> <args…>`, output to stdout only. */
export function scriptArgv(command: string, args: readonly string[]): string[] {
	const line = ['exec', ...[command, ...args].map(shellQuote)].join(' ')
	return ['-qefc', line, '/dev/null']
}

export function sttyArgv(slave: string, size: TerminalSize): string[] {
	return ['-F', slave, 'rows', String(size.rows), 'cols', String(size.cols)]
}
