import { readFileSync } from 'node:fs'
import { MAX_TIMER_MS } from '../contract/argument-validators.js'
import { SandboxConfigError } from '../contract/errors.js'
import { attachCommand } from './attach-command.js'
import { checkpointCommand } from './checkpoint-command.js'
import { reportCliError } from './cli-report.js'
import { cpCommand } from './cp-command.js'
import { destroyCommand } from './destroy-command.js'
import { detachedRunCommand } from './detached-run-command.js'
import { doctorCommand } from './doctor-command.js'
import { execCommand } from './exec-command.js'
import { gcCommand } from './gc-command.js'
import { imageCommand } from './image-command.js'
import { killCommand } from './kill-command.js'
import { logsCommand } from './logs-command.js'
import { mcpCommand } from './mcp-command.js'
import { type CliCommand, EXIT_CODES, parseCliArgs, USAGE } from './parse-args.js'
import { portCommand } from './port-command.js'
import { runCommand } from './run-command.js'
import { checkCliImage } from './sandbox-config.js'
import { sessionsCommand } from './sessions-command.js'
import { shellCommand } from './shell-command.js'

function packageVersion(): string {
	const manifest = new URL('../../package.json', import.meta.url)
	const parsed: unknown = JSON.parse(readFileSync(manifest, 'utf8'))
	return typeof parsed === 'object' && parsed !== null && 'version' in parsed
		? String(parsed.version)
		: 'unknown'
}

/** `--debug` anywhere before `--`: stack traces on errors. Returns the rest of argv. */
export function splitDebugFlag(argv: readonly string[]): {
	readonly debug: boolean
	readonly rest: readonly string[]
} {
	const end = argv.indexOf('--')
	const head = end < 0 ? argv : argv.slice(0, end)
	const tail = end < 0 ? [] : argv.slice(end)
	const kept = head.filter((arg) => arg !== '--debug')
	return { debug: kept.length !== head.length, rest: [...kept, ...tail] }
}

/**
 * `run`/`shell`/`mcp --tier container --image X` with an unusable image: one line and 125 (the
 * documented code for "the sandbox could not be made": a refused configuration, as `run` reports
 * the same image refused at create), before anything starts. Undefined when the image is usable.
 */
async function imageRefusal(
	command: CliCommand,
	context: { readonly verb?: string; readonly debug: boolean },
): Promise<number | undefined> {
	const flags =
		command.kind === 'mcp'
			? { tier: command.tier, image: command.sandbox?.image }
			: command.kind === 'run' || command.kind === 'shell'
				? command
				: undefined
	if (flags === undefined) return undefined
	try {
		await checkCliImage(flags)
		return undefined
	} catch (error) {
		if (!(error instanceof SandboxConfigError)) throw error
		return reportCliError(error, { ...context, exitCode: EXIT_CODES.sandboxUnavailable })
	}
}

/** Runs the CLI and resolves with the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
	const { debug, rest } = splitDebugFlag(argv)
	// `run` without --timeout-ms has no deadline: lift the agent's own ceiling (30 min by default).
	process.env.NAMZU_SANDBOX_MAX_TIMEOUT_MS ||= String(MAX_TIMER_MS)
	try {
		const command = parseCliArgs(rest)
		const refused = await imageRefusal(command, { verb: rest[0], debug })
		if (refused !== undefined) return refused
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
				return await (command.detach ? detachedRunCommand(command) : runCommand(command, { debug }))
			case 'exec':
				return await execCommand(command, { debug })
			case 'kill':
				return await killCommand(command)
			case 'cp':
				return await cpCommand(command.source, command.destination)
			case 'port':
				return await portCommand(command.sandboxId, command.port, command.auth)
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
			case 'image':
				return await imageCommand(command)
			case 'mcp':
				return await mcpCommand(command, packageVersion())
			case 'checkpoint':
			case 'checkpoints':
			case 'checkpoint-rm':
			case 'rollback':
			case 'fork':
				return await checkpointCommand(command)
		}
	} catch (error) {
		return reportCliError(error, { verb: rest[0], debug })
	}
}
