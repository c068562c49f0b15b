/**
 * The CLI's exit code for a finished command, as a shell would report it: its own code, 128 + the
 * signal number when a signal ended it, 124 for `--timeout-ms`, 130 for Ctrl-C. Pure.
 */
import type { SandboxExecResult } from '../contract/sandbox.js'
import { EXIT_CODES } from './parse-args.js'

const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
	SIGHUP: 1,
	SIGINT: 2,
	SIGQUIT: 3,
	SIGKILL: 9,
	SIGSEGV: 11,
	SIGPIPE: 13,
	SIGTERM: 15,
}

export function signalNumber(name: string): number {
	return SIGNAL_NUMBERS[name] ?? 0
}

export function exitCodeOf(result: SandboxExecResult): number {
	if (result.aborted) return EXIT_CODES.interrupted
	if (result.timedOut) return EXIT_CODES.timedOut
	if (result.exitCode < 0) return result.signal ? 128 + signalNumber(result.signal) : 1
	return result.exitCode
}
