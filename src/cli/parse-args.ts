/**
 * Pure argument parsing for the `namzu-sandbox` command. Everything after `--` belongs to the
 * sandboxed command and is never interpreted.
 */

export type CliCommand =
	| {
			readonly kind: 'run'
			readonly allowNetwork: boolean
			readonly workspace?: string
			readonly timeoutMs?: number
			readonly isolation: 'bubblewrap' | 'none'
			readonly command: string
			readonly args: readonly string[]
	  }
	| {
			readonly kind: 'shell'
			readonly allowNetwork: boolean
			readonly workspace?: string
			readonly isolation: 'bubblewrap' | 'none'
			readonly shell?: string
	  }
	| { readonly kind: 'doctor'; readonly json: boolean }
	| { readonly kind: 'help' }
	| { readonly kind: 'version' }

export class CliUsageError extends Error {
	override readonly name = 'CliUsageError'
}

export const USAGE = `Usage:
  namzu-sandbox run [--allow-network] [--workspace DIR] [--timeout-ms MS] [--no-isolation] -- CMD [ARGS...]
      Run CMD in a fresh local sandbox; stream its output; exit with its exit code.
      Ctrl-C cancels it (the whole process group inside the sandbox is terminated).
  namzu-sandbox shell [--allow-network] [--workspace DIR] [--no-isolation] [--shell PATH]
      An interactive terminal in a fresh local sandbox. Exits with the shell.
  namzu-sandbox doctor [--json]
      What isolation this machine offers, and why.

Options:
  --allow-network   share the host network (default: no network at all)
  --workspace DIR   use DIR (created if missing, never removed) as the sandbox workspace
  --timeout-ms MS   terminate the command after MS milliseconds (exit code 124)
  --no-isolation    run without bubblewrap (development only; nothing is confined)
`

function positiveInteger(flag: string, raw: string | undefined): number {
	if (
		raw === undefined ||
		!/^\d+$/.test(raw) ||
		Number(raw) <= 0 ||
		!Number.isSafeInteger(Number(raw))
	) {
		throw new CliUsageError(
			`${flag} needs a positive integer, got ${raw === undefined ? 'nothing' : JSON.stringify(raw)}`,
		)
	}
	return Number(raw)
}

export function parseCliArgs(argv: readonly string[]): CliCommand {
	const [verb, ...rest] = argv
	if (verb === undefined || verb === 'help' || verb === '--help' || verb === '-h')
		return { kind: 'help' }
	if (verb === '--version' || verb === 'version') return { kind: 'version' }
	if (verb !== 'run' && verb !== 'shell' && verb !== 'doctor') {
		throw new CliUsageError(`unknown command: ${verb}`)
	}
	let allowNetwork = false
	let workspace: string | undefined
	let timeoutMs: number | undefined
	let isolation: 'bubblewrap' | 'none' = 'bubblewrap'
	let shell: string | undefined
	let json = false
	let index = 0
	for (; index < rest.length; index++) {
		const arg = rest[index]
		if (arg === '--') {
			index++
			break
		}
		if (arg === '--allow-network' && verb !== 'doctor') allowNetwork = true
		else if (arg === '--no-isolation' && verb !== 'doctor') isolation = 'none'
		else if (arg === '--workspace' && verb !== 'doctor') {
			workspace = rest[++index]
			if (!workspace) throw new CliUsageError('--workspace needs a directory')
		} else if (arg === '--timeout-ms' && verb === 'run') {
			timeoutMs = positiveInteger('--timeout-ms', rest[++index])
		} else if (arg === '--shell' && verb === 'shell') {
			shell = rest[++index]
			if (!shell) throw new CliUsageError('--shell needs a path')
		} else if (arg === '--json' && verb === 'doctor') json = true
		else if (arg?.startsWith('-')) throw new CliUsageError(`unknown option for ${verb}: ${arg}`)
		else if (verb === 'run') break
		else throw new CliUsageError(`unexpected argument for ${verb}: ${arg}`)
	}
	if (verb === 'doctor') return { kind: 'doctor', json }
	if (verb === 'shell') {
		if (index < rest.length) throw new CliUsageError('shell takes no command; use run -- CMD')
		return {
			kind: 'shell',
			allowNetwork,
			isolation,
			...(workspace === undefined ? {} : { workspace }),
			...(shell === undefined ? {} : { shell }),
		}
	}
	const [command, ...args] = rest.slice(index)
	if (command === undefined) throw new CliUsageError('run needs a command after --')
	return {
		kind: 'run',
		allowNetwork,
		isolation,
		...(workspace === undefined ? {} : { workspace }),
		...(timeoutMs === undefined ? {} : { timeoutMs }),
		command,
		args,
	}
}
