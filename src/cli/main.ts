import { readFileSync } from 'node:fs'
import { LocalSandboxNotFoundError } from '../backends/local/index.js'
import { SandboxError } from '../contract/errors.js'
import {
	AgentSessionDetachedError,
	ExecutionDetachedError,
	ExecutionNotAttachableError,
	SessionRefusedError,
} from '../index.js'
import { AGENT_REFUSAL } from '../wire/refusals.js'
import { attachCommand } from './attach-command.js'
import { missingPrerequisiteLine } from './cli-bubblewrap.js'
import { CliUsageError } from './cli-errors.js'
import { destroyCommand } from './destroy-command.js'
import { detachedRunCommand } from './detached-run-command.js'
import { doctorCommand } from './doctor-command.js'
import { gcCommand } from './gc-command.js'
import { logsCommand } from './logs-command.js'
import { mcpCommand } from './mcp-command.js'
import { EXIT_CODES, parseCliArgs, USAGE } from './parse-args.js'
import { runCommand } from './run-command.js'
import { sessionsCommand } from './sessions-command.js'
import { shellCommand } from './shell-command.js'

function packageVersion(): string {
	const manifest = new URL('../../package.json', import.meta.url)
	const parsed: unknown = JSON.parse(readFileSync(manifest, 'utf8'))
	return typeof parsed === 'object' && parsed !== null && 'version' in parsed
		? String(parsed.version)
		: 'unknown'
}

/** The exit code of a named library refusal (USAGE lists them). */
export function exitCodeForError(error: SandboxError): number {
	if (error instanceof LocalSandboxNotFoundError) return EXIT_CODES.notFound
	if (
		error instanceof ExecutionNotAttachableError &&
		error.refusal === AGENT_REFUSAL.unknown_execution
	) {
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

/** Runs the CLI and resolves with the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
	try {
		const command = parseCliArgs(argv)
		switch (command.kind) {
			case 'help':
				process.stdout.write(USAGE)
				return 0
			case 'version':
				process.stdout.write(`${packageVersion()}\n`)
				return 0
			case 'doctor':
				return await doctorCommand(command)
			case 'run':
				return await (command.detach ? detachedRunCommand(command) : runCommand(command))
			case 'shell':
				return await shellCommand(command)
			case 'attach':
				return await attachCommand(command.handle)
			case 'logs':
				return await logsCommand(command.handle, command.follow)
			case 'sessions':
				return await sessionsCommand(command.sandboxId)
			case 'destroy':
				return await destroyCommand(command.sandboxId)
			case 'gc':
				return await gcCommand(command.dryRun)
			case 'mcp':
				return await mcpCommand(command, packageVersion())
		}
	} catch (error) {
		if (error instanceof CliUsageError) {
			process.stderr.write(`namzu-sandbox: ${error.message}\n\n${USAGE}`)
			return EXIT_CODES.usage
		}
		if (error instanceof SandboxError) {
			const missing = missingPrerequisiteLine(error)
			process.stderr.write(
				missing ? `${missing}\n` : `namzu-sandbox: ${error.name}: ${error.message}\n`,
			)
			return exitCodeForError(error)
		}
		throw error
	}
}
