/**
 * How the CLI reports a failure: one line naming the error and what to do, never a stack trace
 * unless `--debug`; a usage error adds `see: namzu-sandbox <verb> --help`. Returns the exit code.
 */
import { LocalSandboxNotFoundError } from '../backends/local/index.js'
import { CheckpointNotFoundError } from '../contract/checkpoint.js'
import { SandboxError } from '../contract/errors.js'
import {
	AgentSessionDetachedError,
	ExecutionCancelRefusedError,
	ExecutionDetachedError,
	ExecutionNotAttachableError,
	ProcessInputRefusedError,
	SessionRefusedError,
} from '../contract-entry.js'
import { AGENT_REFUSAL } from '../wire/refusals.js'
import { missingPrerequisiteLine } from './cli-bubblewrap.js'
import { CliUsageError } from './cli-errors.js'
import { EXIT_CODES, isVerb } from './parse-args.js'

/** The exit code of a named library refusal (USAGE lists them). */
export function exitCodeForError(error: SandboxError): number {
	if (error instanceof CliUsageError) return EXIT_CODES.usage
	if (error instanceof LocalSandboxNotFoundError) return EXIT_CODES.notFound
	if (error instanceof CheckpointNotFoundError) return EXIT_CODES.notFound
	if (
		error instanceof ExecutionNotAttachableError &&
		error.refusal === AGENT_REFUSAL.unknown_execution
	) {
		return EXIT_CODES.notFound
	}
	if (
		error instanceof ExecutionCancelRefusedError &&
		error.refusal === AGENT_REFUSAL.unknown_execution
	) {
		return EXIT_CODES.notFound
	}
	if (error instanceof ProcessInputRefusedError && error.reason === 'unknown-execution') {
		return EXIT_CODES.notFound
	}
	if (error instanceof SessionRefusedError && error.refusal === AGENT_REFUSAL.unknown_session) {
		return EXIT_CODES.notFound
	}
	if (error instanceof ExecutionDetachedError || error instanceof AgentSessionDetachedError) {
		return EXIT_CODES.detached
	}
	return EXIT_CODES.refused
}

/** The single line printed for `error` (pure). */
export function errorLine(error: unknown, verb: string | undefined): string {
	if (error instanceof CliUsageError) {
		// A word that is no command has no help of its own.
		const see =
			verb === undefined || !isVerb(verb) ? 'namzu-sandbox --help' : `namzu-sandbox ${verb} --help`
		return `namzu-sandbox: ${error.message}\nsee: ${see}`
	}
	if (error instanceof SandboxError) {
		return missingPrerequisiteLine(error) ?? `namzu-sandbox: ${error.name}: ${error.message}`
	}
	const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
	return `namzu-sandbox: unexpected ${text} (run again with --debug for the stack trace)`
}

/** Prints `error` (its stack too under `--debug`) and answers the exit code. */
export function reportCliError(
	error: unknown,
	context: { readonly verb?: string; readonly debug: boolean; readonly exitCode?: number },
): number {
	process.stderr.write(`${errorLine(error, context.verb)}\n`)
	if (context.debug && error instanceof Error && error.stack) {
		process.stderr.write(`${error.stack}\n`)
	}
	if (context.exitCode !== undefined) return context.exitCode
	return error instanceof SandboxError ? exitCodeForError(error) : EXIT_CODES.refused
}
