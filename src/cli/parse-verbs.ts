/**
 * Parsing of the verbs that drive a kept-alive sandbox from later processes, as `docker exec`,
 * `kill`, `cp` and `port` do: `exec SANDBOX -- CMD`, `kill HANDLE`, `cp SRC DST`, `port SANDBOX
 * PORT`; and `image build|path`. Pure; everything after `--` belongs to the command.
 */
import { MAX_TIMER_MS, requireIntegerText } from '../contract/argument-validators.js'
import { EXECUTION_SIGNALS, type ExecutionSignal } from '../wire/execution-input.js'
import { SESSION_SIGNALS, type SessionSignal } from '../wire/sessions.js'
import { CliUsageError } from './cli-errors.js'
import { type CliHandle, parseCliHandle } from './cli-handle.js'
import { FLAG_SITE } from './sandbox-flags.js'
import { unknownOption } from './unknown-option.js'

export interface ExecVerb {
	readonly kind: 'exec'
	readonly sandboxId: string
	readonly command: string
	readonly args: readonly string[]
	/** `-i`: pass the CLI's stdin (a pipe to EOF, or the live terminal under `-t`). */
	readonly interactive: boolean
	/** `-t`: a PTY when the CLI runs on a terminal. */
	readonly tty: boolean
	/** `-d`: start it detached, print SANDBOX/EXECUTION and exit at once. */
	readonly detach: boolean
	readonly env?: Readonly<Record<string, string>>
	readonly cwd?: string
	readonly timeoutMs?: number
}

/** One side of `cp`: a host path, or `SANDBOX:path` (relative to the workspace root). */
export type CpEndpoint =
	| { readonly kind: 'host'; readonly path: string }
	| { readonly kind: 'sandbox'; readonly sandboxId: string; readonly path: string }

/** `kill` of a detached execution: any signal an execution takes. */
export interface ExecutionKillVerb {
	readonly kind: 'kill'
	readonly handle: Extract<CliHandle, { readonly kind: 'execution' }>
	readonly signal?: ExecutionSignal
}

/** `kill` of a session: only the signals a session takes. */
export interface SessionKillVerb {
	readonly kind: 'kill'
	readonly handle: Extract<CliHandle, { readonly kind: 'session' }>
	readonly signal?: SessionSignal
}

export type KillVerb = ExecutionKillVerb | SessionKillVerb

export type SandboxVerb =
	| ExecVerb
	| KillVerb
	| { readonly kind: 'cp'; readonly source: CpEndpoint; readonly destination: CpEndpoint }
	| {
			readonly kind: 'port'
			readonly sandboxId: string
			readonly port: number
			readonly auth: boolean
	  }
	| ImageVerb

/** `image build [--vm | --rootfs-only]`, `image path [--vm]`: the guest image builder's verbs. */
export interface ImageVerb {
	readonly kind: 'image'
	readonly action: 'build' | 'path'
	/** `--vm`: the microVM tier's kernel, initramfs and root disk instead of the container image. */
	readonly vm: boolean
	/** `build --rootfs-only`: the base root filesystem only, no OCI layout. */
	readonly rootfsOnly: boolean
}

const SANDBOX_ID = /^[0-9a-f]{12}$/

function sandboxId(verb: string, raw: string | undefined): string {
	if (raw === undefined) throw new CliUsageError(`${verb} needs a SANDBOX id`)
	if (!SANDBOX_ID.test(raw))
		throw new CliUsageError(`${verb}: ${JSON.stringify(raw)} is not a sandbox id (12 hex digits)`)
	return raw
}

const SHORT_EXEC_FLAGS = /^-[itd]+$/
const EXEC_FLAGS = [
	'-i',
	'--interactive',
	'-t',
	'--tty',
	'-d',
	'--detach',
	'-e',
	'--env',
	'-w',
	'--workdir',
	'--timeout-ms',
]

// long: one branch per flag of `exec`, each a line or two
export function parseExec(rest: readonly string[]): ExecVerb {
	let interactive = false
	let tty = false
	let detach = false
	const env: Record<string, string> = {}
	let cwd: string | undefined
	let timeoutMs: number | undefined
	let index = 0
	const value = (flag: string): string => {
		const given = rest[++index]
		if (given === undefined || given === '') throw new CliUsageError(`${flag} needs a value`)
		return given
	}
	for (; index < rest.length; index++) {
		const arg = rest[index] ?? ''
		if (!arg.startsWith('-') || arg === '--') break
		if (SHORT_EXEC_FLAGS.test(arg)) {
			interactive ||= arg.includes('i')
			tty ||= arg.includes('t')
			detach ||= arg.includes('d')
		} else if (arg === '--interactive') interactive = true
		else if (arg === '--tty') tty = true
		else if (arg === '--detach') detach = true
		else if (arg === '-e' || arg === '--env') {
			const pair = value(arg)
			const at = pair.indexOf('=')
			if (at <= 0) throw new CliUsageError(`${arg} needs NAME=VALUE, got ${JSON.stringify(pair)}`)
			env[pair.slice(0, at)] = pair.slice(at + 1)
		} else if (arg === '-w' || arg === '--workdir') cwd = value(arg)
		else if (arg === '--timeout-ms')
			timeoutMs = requireIntegerText(FLAG_SITE, arg, value(arg), { min: 1, max: MAX_TIMER_MS })
		else throw unknownOption('exec', arg, EXEC_FLAGS)
	}
	const id = sandboxId('exec', rest[index])
	index++
	if (rest[index] === '--') index++
	const [command, ...args] = rest.slice(index)
	if (command === undefined) throw new CliUsageError('exec needs a command: exec SANDBOX -- CMD')
	if (detach && (interactive || tty)) throw new CliUsageError('exec -d excludes -i and -t')
	return {
		kind: 'exec',
		sandboxId: id,
		command,
		args,
		interactive,
		tty,
		detach,
		...(Object.keys(env).length > 0 ? { env } : {}),
		...(cwd === undefined ? {} : { cwd }),
		...(timeoutMs === undefined ? {} : { timeoutMs }),
	}
}

function shortNames(names: readonly string[]): string {
	return names.map((name) => name.slice(3)).join(', ')
}

/** `TERM`, `SIGTERM`, `usr1`, … as the guest's allow-listed name (an execution takes the most). */
function signalName(raw: string | undefined): ExecutionSignal {
	const upper = (raw ?? '').toUpperCase()
	const name = upper.startsWith('SIG') ? upper : `SIG${upper}`
	const signal = EXECUTION_SIGNALS.find((allowed) => allowed === name)
	if (signal === undefined)
		throw new CliUsageError(
			`--signal needs one of ${shortNames(EXECUTION_SIGNALS)}, got ${JSON.stringify(raw ?? '')}`,
		)
	return signal
}

export function parseKill(rest: readonly string[]): KillVerb {
	let signal: ExecutionSignal | undefined
	const positionals: string[] = []
	for (let index = 0; index < rest.length; index++) {
		const arg = rest[index] ?? ''
		if (arg === '--signal' || arg === '-s') signal = signalName(rest[++index])
		else if (arg.startsWith('--signal=')) signal = signalName(arg.slice('--signal='.length))
		else if (arg.startsWith('-')) throw unknownOption('kill', arg, ['--signal', '-s'])
		else positionals.push(arg)
	}
	if (positionals.length !== 1)
		throw new CliUsageError('kill needs one HANDLE: SANDBOX/EXECUTION or SANDBOX/session:ID')
	const raw = positionals[0] ?? ''
	const handle = parseCliHandle(raw)
	if (handle === undefined || handle.kind === 'sandbox')
		throw new CliUsageError(
			`kill: ${JSON.stringify(raw)} is not SANDBOX/EXECUTION or SANDBOX/session:ID (to end a whole sandbox: namzu-sandbox destroy SANDBOX)`,
		)
	if (handle.kind === 'execution')
		return { kind: 'kill', handle, ...(signal === undefined ? {} : { signal }) }
	if (signal === undefined) return { kind: 'kill', handle }
	const sessionSignal = SESSION_SIGNALS.find((allowed) => allowed === signal)
	if (sessionSignal === undefined)
		throw new CliUsageError(
			`--signal ${signal.slice(3)}: a session takes one of ${shortNames(SESSION_SIGNALS)}`,
		)
	return { kind: 'kill', handle, signal: sessionSignal }
}

function cpEndpoint(raw: string): CpEndpoint {
	const colon = raw.indexOf(':')
	if (colon === 12 && SANDBOX_ID.test(raw.slice(0, 12))) {
		// `SANDBOX:` alone is the workspace root.
		return { kind: 'sandbox', sandboxId: raw.slice(0, 12), path: raw.slice(13) || '.' }
	}
	if (raw === '') throw new CliUsageError('cp: an empty path')
	return { kind: 'host', path: raw }
}

export function parseCp(rest: readonly string[]): SandboxVerb {
	const positionals = rest.filter((arg) => arg !== '--')
	const option = positionals.find((arg) => arg.startsWith('-') && arg !== '-')
	if (option !== undefined) throw unknownOption('cp', option, [])
	if (positionals.length !== 2)
		throw new CliUsageError('cp needs SRC and DST, one of them SANDBOX:path')
	const source = cpEndpoint(positionals[0] ?? '')
	const destination = cpEndpoint(positionals[1] ?? '')
	if ((source.kind === 'sandbox') === (destination.kind === 'sandbox'))
		throw new CliUsageError(
			'cp: exactly one of SRC and DST is SANDBOX:path (the other a host path)',
		)
	return { kind: 'cp', source, destination }
}

export function parsePort(rest: readonly string[]): SandboxVerb {
	let auth = true
	const positionals: string[] = []
	for (const arg of rest) {
		if (arg === '--no-auth') auth = false
		else if (arg.startsWith('-')) throw unknownOption('port', arg, ['--no-auth'])
		else positionals.push(arg)
	}
	if (positionals.length !== 2) throw new CliUsageError('port needs SANDBOX and PORT')
	const id = sandboxId('port', positionals[0])
	const port = requireIntegerText(FLAG_SITE, 'PORT', positionals[1], { min: 1, max: 65_535 })
	return { kind: 'port', sandboxId: id, port, auth }
}

export function parseImage(rest: readonly string[]): SandboxVerb {
	const [action, ...flags] = rest
	if (action !== 'build' && action !== 'path')
		throw new CliUsageError(
			action === undefined
				? 'image needs build or path'
				: `image: unknown action ${JSON.stringify(action)} (build or path)`,
		)
	let vm = false
	let rootfsOnly = false
	for (const flag of flags) {
		if (flag === '--vm') vm = true
		else if (flag === '--rootfs-only' && action === 'build') rootfsOnly = true
		else
			throw unknownOption(
				`image ${action}`,
				flag,
				action === 'build' ? ['--vm', '--rootfs-only'] : ['--vm'],
			)
	}
	if (vm && rootfsOnly) throw new CliUsageError('image build: --vm excludes --rootfs-only')
	return { kind: 'image', action, vm, rootfsOnly }
}
