/**
 * Everything about a `terminal` request that needs no process (pure): validation, the util-linux
 * `script` command line, and the allow-listed kill signals.
 */

import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { OpRefusal } from '../server/op-refusal.js'

export const SCRIPT_PATH = '/usr/bin/script'
export const STTY_PATH = '/usr/bin/stty'
export const DEFAULT_TERMINAL_COMMAND = '/bin/sh'
export const MAX_TERMINAL_DIMENSION = 1000

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
	return (
		Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_TERMINAL_DIMENSION
	)
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

function isStringRecord(value: unknown): value is Record<string, string> {
	return (
		typeof value === 'object' &&
		value !== null &&
		!Array.isArray(value) &&
		Object.values(value).every((entry) => typeof entry === 'string')
	)
}

export function parseTerminalRequest(body: Record<string, unknown>): TerminalSpec {
	const size = parseTerminalSize(body)
	const { command, args, cwd, env } = body
	if (command !== undefined && (typeof command !== 'string' || command === '')) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_terminal_command)
	}
	if (
		args !== undefined &&
		!(Array.isArray(args) && args.every((arg) => typeof arg === 'string'))
	) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_terminal_args)
	}
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

const KILL_SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'] as const
export type TerminalKillSignal = (typeof KILL_SIGNALS)[number]

/** The allow-listed signal named, else SIGTERM. */
export function terminalKillSignal(value: unknown): TerminalKillSignal {
	return KILL_SIGNALS.find((signal) => signal === value) ?? 'SIGTERM'
}
