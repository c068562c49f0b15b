import { readFileSync } from 'node:fs'
import { SandboxError } from '../contract/errors.js'
import { doctorCommand } from './doctor-command.js'
import { CliUsageError, parseCliArgs, USAGE } from './parse-args.js'
import { runCommand } from './run-command.js'
import { shellCommand } from './shell-command.js'

function packageVersion(): string {
	const manifest = new URL('../../package.json', import.meta.url)
	const parsed: unknown = JSON.parse(readFileSync(manifest, 'utf8'))
	return typeof parsed === 'object' && parsed !== null && 'version' in parsed
		? String(parsed.version)
		: 'unknown'
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
				return await runCommand(command)
			case 'shell':
				return await shellCommand(command)
		}
	} catch (error) {
		if (error instanceof CliUsageError) {
			process.stderr.write(`namzu-sandbox: ${error.message}\n\n${USAGE}`)
			return 2
		}
		if (error instanceof SandboxError) {
			process.stderr.write(`namzu-sandbox: ${error.name}: ${error.message}\n`)
			return 1
		}
		throw error
	}
}
