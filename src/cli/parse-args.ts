/**
 * Pure argument parsing for the `namzu-sandbox` command. Everything after `--` belongs to the
 * sandboxed command and is never interpreted.
 */
import {
	MAX_KEEP_ALIVE_MS,
	MIN_KEEP_ALIVE_MS,
} from '../backends/machine/spec/keep-alive-lifetime.js'
import { MAX_TIMER_MS, requireIntegerText } from '../contract/argument-validators.js'
import { CliUsageError } from './cli-errors.js'
import { type CliHandle, parseCliHandle } from './cli-handle.js'
import {
	type CheckpointVerb,
	parseCheckpoint,
	parseCheckpoints,
	parseFork,
	parseRollback,
} from './parse-checkpoint-verbs.js'
import {
	parseCp,
	parseExec,
	parseImage,
	parseKill,
	parsePort,
	type SandboxVerb,
} from './parse-verbs.js'
import {
	type CliSandboxFlags,
	FLAG_SITE,
	SANDBOX_FLAG_NAMES,
	SANDBOX_VALUE_FLAGS,
	SandboxFlagCollector,
} from './sandbox-flags.js'
import { unknownCommand } from './unknown-command.js'
import { unknownOption } from './unknown-option.js'

export { USAGE } from './usage.js'

export type CliCommand =
	| ({
			readonly kind: 'run'
			readonly timeoutMs?: number
			/** `--no-stdin`: do not read the CLI's piped stdin. */
			readonly noStdin?: boolean
			/** Start it in a kept-alive sandbox, print the handle and exit at once. */
			readonly detach: boolean
			readonly keepAliveMs?: number
			readonly command: string
			readonly args: readonly string[]
	  } & CliSandboxFlags)
	| ({
			readonly kind: 'shell'
			readonly shell?: string
			/** A persistent session in a kept-alive sandbox, re-attachable after this process ends. */
			readonly persistent: boolean
			readonly keepAliveMs?: number
	  } & CliSandboxFlags)
	| SandboxVerb
	| CheckpointVerb
	| { readonly kind: 'attach'; readonly handle: CliHandle }
	| { readonly kind: 'logs'; readonly handle: CliHandle; readonly follow: boolean }
	| { readonly kind: 'sessions'; readonly sandboxId?: string }
	| { readonly kind: 'destroy'; readonly sandboxId: string }
	| { readonly kind: 'doctor'; readonly json: boolean }
	| { readonly kind: 'gc'; readonly dryRun: boolean }
	| {
			readonly kind: 'mcp'
			readonly transport: 'stdio' | 'http'
			readonly host: string
			readonly port: number
			readonly allowRemote: boolean
			/** `--shared-sandboxes`: every HTTP client sees every sandbox (default: only its own). */
			readonly sharedSandboxes: boolean
			readonly allowNetwork: boolean
			readonly isolation: 'bubblewrap' | 'none'
			readonly tier: 'local' | 'container' | 'kubernetes'
			/** Where `--tier kubernetes` creates its task sandboxes. */
			readonly kubernetes?: McpKubernetesTarget
			/** `--env`, limits, `--allow-host` …, and `--image` for the container tier's sandboxes. */
			readonly sandbox?: Omit<CliSandboxFlags, 'allowNetwork' | 'isolation' | 'workspace'>
	  }
	| { readonly kind: 'help' }
	| { readonly kind: 'version' }

/** `mcp --tier kubernetes`: the namespace and template its sandboxes come from, and the access. */
export interface McpKubernetesTarget {
	readonly namespace: string
	readonly template: string
	readonly warmPool?: string
	/** The in-cluster service account instead of a kubeconfig. */
	readonly inCluster: boolean
	readonly kubeconfig?: string
	readonly context?: string
	readonly agentAddress?: 'service' | 'pod-ip'
	readonly agentPort?: number
}

/** Exit codes of the CLI's own failures (a command's exit code passes through unchanged). */
export const EXIT_CODES = {
	/** Bad usage (CliUsageError). */
	usage: 2,
	/** A library refusal (any SandboxError other than the ones below). */
	refused: 1,
	/** No such kept-alive sandbox, session or execution (LocalSandboxNotFoundError, unknown id). */
	notFound: 3,
	/** The watched execution or session could not be followed to its end (detached, connection lost). */
	detached: 4,
	/** Ctrl-C. */
	interrupted: 130,
	/** `--timeout-ms` fired. */
	timedOut: 124,
	/** The sandbox could not be made (a missing prerequisite, a refused configuration). */
	sandboxUnavailable: 125,
	/** The command exists but could not be executed (as a shell reports it). */
	notExecutable: 126,
	/** No such command in the sandbox (as a shell reports it). */
	commandNotFound: 127,
} as const

/** Every command the CLI has. */
export const VERBS = [
	'run',
	'exec',
	'kill',
	'cp',
	'port',
	'shell',
	'doctor',
	'attach',
	'logs',
	'sessions',
	'destroy',
	'gc',
	'mcp',
	'image',
	'checkpoint',
	'checkpoints',
	'rollback',
	'fork',
] as const
type Verb = (typeof VERBS)[number]

/** Whether `value` is one of the CLI's commands. */
export function isVerb(value: string): value is Verb {
	return (VERBS as readonly string[]).includes(value)
}

function milliseconds(flag: string, raw: string | undefined, min: number, max: number): number {
	return requireIntegerText(FLAG_SITE, flag, raw, { min, max })
}

function handleArgument(verb: string, raw: string | undefined): CliHandle {
	if (raw === undefined) throw new CliUsageError(`${verb} needs a HANDLE`)
	const handle = parseCliHandle(raw)
	if (handle === undefined) {
		throw new CliUsageError(
			`${verb}: ${JSON.stringify(raw)} is not a handle (SANDBOX/EXECUTION or SANDBOX/session:ID)`,
		)
	}
	return handle
}

function sandboxArgument(verb: string, raw: string | undefined): string {
	const handle = raw === undefined ? undefined : parseCliHandle(raw)
	if (handle?.kind !== 'sandbox') {
		throw new CliUsageError(`${verb}: ${JSON.stringify(raw ?? '')} is not a sandbox id`)
	}
	return handle.sandboxId
}

/** `attach`, `logs`, `sessions`, `destroy`: one positional at most, few flags. */
function parseHandleVerb(verb: Verb, rest: readonly string[]): CliCommand {
	let follow = false
	const positionals: string[] = []
	for (const arg of rest) {
		if (arg === '--follow' && verb === 'logs') follow = true
		else if (arg.startsWith('-'))
			throw unknownOption(verb, arg, verb === 'logs' ? ['--follow'] : [])
		else positionals.push(arg)
	}
	if (positionals.length > 1) {
		throw new CliUsageError(`unexpected argument for ${verb}: ${positionals[1]}`)
	}
	const [first] = positionals
	switch (verb) {
		case 'attach':
			return { kind: 'attach', handle: handleArgument(verb, first) }
		case 'logs':
			return { kind: 'logs', handle: handleArgument(verb, first), follow }
		case 'sessions':
			return first === undefined
				? { kind: 'sessions' }
				: { kind: 'sessions', sandboxId: sandboxArgument(verb, first) }
		default:
			return { kind: 'destroy', sandboxId: sandboxArgument(verb, first) }
	}
}

function parseGc(rest: readonly string[]): CliCommand {
	let dryRun = false
	for (const arg of rest) {
		if (arg === '--dry-run') dryRun = true
		else if (arg.startsWith('-')) throw unknownOption('gc', arg, ['--dry-run'])
		else throw new CliUsageError(`unexpected argument for gc: ${arg}`)
	}
	return { kind: 'gc', dryRun }
}

export const DEFAULT_MCP_HOST = '127.0.0.1'
export const DEFAULT_MCP_PORT = 8808

/** `mcp`: the transport and what every sandbox it creates gets. */
function parseMcp(rest: readonly string[]): CliCommand {
	let http = false
	let host: string | undefined
	let port: number | undefined
	let allowRemote = false
	let sharedSandboxes = false
	let allowNetwork = false
	let isolation: 'bubblewrap' | 'none' = 'bubblewrap'
	let tier: 'local' | 'container' | 'kubernetes' = 'local'
	const kubernetes = new Map<string, string>()
	let inCluster = false
	const sandboxFlags = new SandboxFlagCollector('mcp')
	let sandboxFlagSeen: string | undefined
	const value = (flag: string, raw: string | undefined): string => {
		if (raw === undefined || raw === '' || raw.startsWith('--'))
			throw new CliUsageError(`${flag} needs a value`)
		return raw
	}
	for (let index = 0; index < rest.length; index++) {
		const arg = rest[index]
		if (arg === '--http') http = true
		else if (arg === '--port')
			port = requireIntegerText(FLAG_SITE, '--port', rest[++index], { min: 0, max: 65_535 })
		else if (arg === '--host') {
			host = rest[++index]
			if (!host) throw new CliUsageError('--host needs an address')
		} else if (arg === '--allow-remote') allowRemote = true
		else if (arg === '--shared-sandboxes') sharedSandboxes = true
		else if (arg === '--allow-network') allowNetwork = true
		else if (arg === '--no-isolation') isolation = 'none'
		else if (arg === '--in-cluster') inCluster = true
		else if (arg === '--tier') {
			const chosen = rest[++index]
			if (chosen !== 'local' && chosen !== 'container' && chosen !== 'kubernetes')
				throw new CliUsageError(
					`--tier: local, container or kubernetes, got ${JSON.stringify(chosen ?? '')}`,
				)
			tier = chosen
			// local and container are the sandbox flags' own tiers: their checks (--image) apply.
			if (chosen !== 'kubernetes') sandboxFlags.take(arg, chosen)
		} else if (arg !== undefined && MCP_KUBERNETES_FLAGS.includes(arg)) {
			kubernetes.set(arg, value(arg, rest[++index]))
		} else {
			const used = arg === undefined ? 0 : sandboxFlags.take(arg, rest[index + 1])
			if (used === 0) throw unknownOption('mcp', arg ?? '', MCP_FLAGS)
			sandboxFlagSeen ??= arg
			index += used - 1
		}
	}
	if (!http && (host !== undefined || port !== undefined || allowRemote || sharedSandboxes)) {
		throw new CliUsageError(
			'--host, --port, --allow-remote and --shared-sandboxes apply only to mcp --http',
		)
	}
	const common = {
		kind: 'mcp',
		transport: http ? 'http' : 'stdio',
		host: host ?? DEFAULT_MCP_HOST,
		port: port ?? DEFAULT_MCP_PORT,
		allowRemote,
		sharedSandboxes,
		allowNetwork,
		isolation,
	} as const
	if (tier !== 'kubernetes') {
		const stray = [...kubernetes.keys(), ...(inCluster ? ['--in-cluster'] : [])][0]
		if (stray !== undefined)
			throw new CliUsageError(`${stray} applies only to mcp --tier kubernetes`)
		// The tier is this command's field; the sandbox flags keep only what shapes a sandbox.
		const { tier: _tier, ...sandbox } = sandboxFlags.result(common)
		return { ...common, tier, ...(Object.keys(sandbox).length > 0 ? { sandbox } : {}) }
	}
	if (sandboxFlagSeen !== undefined)
		throw new CliUsageError(`${sandboxFlagSeen}: on --tier kubernetes the template decides it`)
	return { ...common, tier, kubernetes: kubernetesTarget(kubernetes, inCluster, common) }
}

const MCP_KUBERNETES_FLAGS = [
	'--namespace',
	'--template',
	'--warm-pool',
	'--kubeconfig',
	'--context',
	'--agent-address',
	'--agent-port',
]

/** Every flag `mcp` takes, for the unknown-option hint. */
const MCP_FLAGS = [
	'--http',
	'--port',
	'--host',
	'--allow-remote',
	'--shared-sandboxes',
	'--allow-network',
	'--no-isolation',
	'--in-cluster',
	'--best-effort-limits',
	...SANDBOX_VALUE_FLAGS,
	...MCP_KUBERNETES_FLAGS,
]

/** The flags `run`, `shell` and `doctor` take beyond the sandbox flags, for the hint. */
const OWN_FLAGS = {
	run: ['--timeout-ms', '--detach', '--no-stdin', '--keep-alive-ms'],
	shell: ['--persistent', '--keep-alive-ms', '--shell'],
	doctor: ['--json'],
} as const

/** The Kubernetes half of `mcp`: namespace and template required, one way to reach the API. */
function kubernetesTarget(
	flags: ReadonlyMap<string, string>,
	inCluster: boolean,
	common: { readonly allowNetwork: boolean; readonly isolation: 'bubblewrap' | 'none' },
): McpKubernetesTarget {
	// The cluster's template and its NetworkPolicy decide both; a flag could only be ignored.
	if (common.allowNetwork)
		throw new CliUsageError('--allow-network: on --tier kubernetes the template decides egress')
	if (common.isolation === 'none')
		throw new CliUsageError('--no-isolation applies only to mcp --tier local')
	const namespace = flags.get('--namespace')
	const template = flags.get('--template')
	if (namespace === undefined) throw new CliUsageError('mcp --tier kubernetes needs --namespace')
	if (template === undefined) throw new CliUsageError('mcp --tier kubernetes needs --template')
	if (inCluster && (flags.has('--kubeconfig') || flags.has('--context')))
		throw new CliUsageError('--in-cluster excludes --kubeconfig and --context')
	const address = flags.get('--agent-address')
	if (address !== undefined && address !== 'service' && address !== 'pod-ip')
		throw new CliUsageError(`--agent-address: service or pod-ip, got ${JSON.stringify(address)}`)
	const optional = (flag: string, key: string) => {
		const given = flags.get(flag)
		return given === undefined ? {} : { [key]: given }
	}
	const port = flags.get('--agent-port')
	return {
		namespace,
		template,
		inCluster,
		...(port === undefined
			? {}
			: {
					agentPort: requireIntegerText(FLAG_SITE, '--agent-port', port, { min: 1, max: 65_535 }),
				}),
		...optional('--warm-pool', 'warmPool'),
		...optional('--kubeconfig', 'kubeconfig'),
		...optional('--context', 'context'),
		...(address === undefined ? {} : { agentAddress: address }),
	}
}

export function parseCliArgs(argv: readonly string[]): CliCommand {
	const [verb, ...rest] = argv
	if (verb === undefined || verb === 'help' || verb === '--help' || verb === '-h')
		return { kind: 'help' }
	if (verb === '--version' || verb === 'version') return { kind: 'version' }
	if (!isVerb(verb)) throw unknownCommand(verb, VERBS)
	// `namzu-sandbox <verb> --help`: only right after the verb, never a command's own argument.
	if (rest[0] === '--help' || rest[0] === '-h') return { kind: 'help' }
	if (verb === 'mcp') return parseMcp(rest)
	if (verb === 'attach' || verb === 'logs' || verb === 'sessions' || verb === 'destroy') {
		return parseHandleVerb(verb, rest)
	}
	if (verb === 'gc') return parseGc(rest)
	if (verb === 'exec') return parseExec(rest)
	if (verb === 'kill') return parseKill(rest)
	if (verb === 'cp') return parseCp(rest)
	if (verb === 'port') return parsePort(rest)
	if (verb === 'image') return parseImage(rest)
	if (verb === 'checkpoint') return parseCheckpoint(rest)
	if (verb === 'checkpoints') return parseCheckpoints(rest)
	if (verb === 'rollback') return parseRollback(rest)
	if (verb === 'fork') return parseFork(rest)
	return parseSandboxVerb(verb, rest)
}

// long: one flag loop shared by run, shell and doctor
function parseSandboxVerb(verb: 'run' | 'shell' | 'doctor', rest: readonly string[]): CliCommand {
	const sandboxFlags = new SandboxFlagCollector(verb)
	let allowNetwork = false
	let workspace: string | undefined
	let timeoutMs: number | undefined
	let isolation: 'bubblewrap' | 'none' = 'bubblewrap'
	let shell: string | undefined
	let json = false
	let detach = false
	let noStdin = false
	let persistent = false
	let keepAliveMs: number | undefined
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
			timeoutMs = milliseconds('--timeout-ms', rest[++index], 1, MAX_TIMER_MS)
		} else if (arg === '--detach' && verb === 'run') detach = true
		else if (arg === '--no-stdin' && verb === 'run') noStdin = true
		else if (arg === '--persistent' && verb === 'shell') persistent = true
		else if (arg === '--keep-alive-ms' && verb !== 'doctor') {
			keepAliveMs = milliseconds(
				'--keep-alive-ms',
				rest[++index],
				MIN_KEEP_ALIVE_MS,
				MAX_KEEP_ALIVE_MS,
			)
		} else if (arg === '--shell' && verb === 'shell') {
			shell = rest[++index]
			if (!shell) throw new CliUsageError('--shell needs a path')
		} else if (arg === '--json' && verb === 'doctor') json = true
		else if (arg?.startsWith('-')) {
			const used = verb === 'doctor' ? 0 : sandboxFlags.take(arg, rest[index + 1])
			if (used === 0)
				throw unknownOption(verb, arg, [
					...OWN_FLAGS[verb],
					...(verb === 'doctor' ? [] : SANDBOX_FLAG_NAMES),
				])
			index += used - 1
		} else if (verb === 'run') break
		else throw new CliUsageError(`unexpected argument for ${verb}: ${arg}`)
	}
	if (verb === 'doctor') return { kind: 'doctor', json }
	if (keepAliveMs !== undefined && !detach && !persistent) {
		throw new CliUsageError(
			`--keep-alive-ms applies only to ${verb === 'run' ? 'run --detach' : 'shell --persistent'}`,
		)
	}
	const keepAlive = keepAliveMs === undefined ? {} : { keepAliveMs }
	const flags = sandboxFlags.result({ allowNetwork, isolation })
	if ((detach || persistent) && flags.tier === 'container')
		throw new CliUsageError(
			`${verb === 'run' ? 'run --detach' : 'shell --persistent'}: kept-alive sandboxes are local only (no --tier container)`,
		)
	if (verb === 'shell') {
		if (index < rest.length) throw new CliUsageError('shell takes no command; use run -- CMD')
		return {
			kind: 'shell',
			allowNetwork,
			isolation,
			persistent,
			...flags,
			...keepAlive,
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
		detach,
		...flags,
		...(noStdin ? { noStdin } : {}),
		...keepAlive,
		...(workspace === undefined ? {} : { workspace }),
		...(timeoutMs === undefined ? {} : { timeoutMs }),
		command,
		args,
	}
}
