/**
 * Parsing of the checkpoint verbs over kept-alive sandboxes: `checkpoint SANDBOX [--label L]
 * [--json]`, `checkpoint rm ID`, `checkpoints [--json]`, `rollback SANDBOX CHECKPOINT`, `fork
 * [--count N] [--keep-alive-ms MS] [SANDBOX FLAGS] CHECKPOINT` (run's sandbox flags, its collector
 * and checks). Pure.
 */
import {
	MAX_KEEP_ALIVE_MS,
	MIN_KEEP_ALIVE_MS,
} from '../backends/machine/spec/keep-alive-lifetime.js'
import { requireIntegerText } from '../contract/argument-validators.js'
import { CliUsageError } from './cli-errors.js'
import { parseCliHandle } from './cli-handle.js'
import {
	type CliSandboxFlags,
	FLAG_SITE,
	SANDBOX_FLAG_NAMES,
	SandboxFlagCollector,
} from './sandbox-flags.js'
import { unknownOption } from './unknown-option.js'

/** The most forks one `fork --count` makes (each a live kept-alive sandbox). */
export const MAX_FORK_COUNT = 100

export type CheckpointVerb =
	| {
			readonly kind: 'checkpoint'
			readonly sandboxId: string
			readonly label?: string
			readonly json: boolean
	  }
	| { readonly kind: 'checkpoint-rm'; readonly checkpointId: string }
	| { readonly kind: 'checkpoints'; readonly json: boolean }
	| { readonly kind: 'rollback'; readonly sandboxId: string; readonly checkpointId: string }
	| {
			readonly kind: 'fork'
			readonly checkpointId: string
			readonly count: number
			readonly keepAliveMs?: number
			/** What every fork is created with: the flags given to `fork`, not its parent's. */
			readonly sandbox: Omit<CliSandboxFlags, 'workspace'>
	  }

const CHECKPOINT_ID = /^[0-9a-f]{16}$/

function sandboxIdOf(verb: string, raw: string | undefined): string {
	const handle = raw === undefined ? undefined : parseCliHandle(raw)
	if (handle?.kind !== 'sandbox') {
		throw new CliUsageError(
			raw === undefined
				? `${verb} needs a SANDBOX id`
				: `${verb}: ${JSON.stringify(raw)} is not a sandbox id (12 hex digits)`,
		)
	}
	return handle.sandboxId
}

function checkpointIdOf(verb: string, raw: string | undefined): string {
	if (raw === undefined) throw new CliUsageError(`${verb} needs a CHECKPOINT id`)
	if (!CHECKPOINT_ID.test(raw)) {
		throw new CliUsageError(
			`${verb}: ${JSON.stringify(raw)} is not a checkpoint id (16 hex digits; namzu-sandbox checkpoints lists them)`,
		)
	}
	return raw
}

/** Flags (`--json`, and those `valued` takes a value for) and positionals, in order. */
function split(
	verb: string,
	rest: readonly string[],
	known: { readonly flags: readonly string[]; readonly valued: readonly string[] },
): { readonly flags: Map<string, string>; readonly positionals: string[] } {
	const flags = new Map<string, string>()
	const positionals: string[] = []
	for (let index = 0; index < rest.length; index++) {
		const arg = rest[index] ?? ''
		if (known.valued.includes(arg)) {
			const value = rest[++index]
			if (value === undefined || value === '') throw new CliUsageError(`${arg} needs a value`)
			flags.set(arg, value)
		} else if (known.flags.includes(arg)) flags.set(arg, '')
		else if (arg.startsWith('-')) throw unknownOption(verb, arg, [...known.flags, ...known.valued])
		else positionals.push(arg)
	}
	return { flags, positionals }
}

function exactly(verb: string, positionals: readonly string[], count: number, what: string): void {
	if (positionals.length > count) {
		throw new CliUsageError(`unexpected argument for ${verb}: ${positionals[count]}`)
	}
	if (positionals.length < count) throw new CliUsageError(`${verb} needs ${what}`)
}

export function parseCheckpoint(rest: readonly string[]): CheckpointVerb {
	if (rest[0] === 'rm') {
		const { positionals } = split('checkpoint rm', rest.slice(1), { flags: [], valued: [] })
		exactly('checkpoint rm', positionals, 1, 'a CHECKPOINT id')
		return { kind: 'checkpoint-rm', checkpointId: checkpointIdOf('checkpoint rm', positionals[0]) }
	}
	const { flags, positionals } = split('checkpoint', rest, {
		flags: ['--json'],
		valued: ['--label'],
	})
	exactly('checkpoint', positionals, 1, 'a SANDBOX id')
	const label = flags.get('--label')
	return {
		kind: 'checkpoint',
		sandboxId: sandboxIdOf('checkpoint', positionals[0]),
		json: flags.has('--json'),
		...(label === undefined ? {} : { label }),
	}
}

export function parseCheckpoints(rest: readonly string[]): CheckpointVerb {
	const { flags, positionals } = split('checkpoints', rest, { flags: ['--json'], valued: [] })
	exactly('checkpoints', positionals, 0, 'no argument')
	return { kind: 'checkpoints', json: flags.has('--json') }
}

export function parseRollback(rest: readonly string[]): CheckpointVerb {
	const { positionals } = split('rollback', rest, { flags: [], valued: [] })
	exactly('rollback', positionals, 2, 'SANDBOX and CHECKPOINT')
	return {
		kind: 'rollback',
		sandboxId: sandboxIdOf('rollback', positionals[0]),
		checkpointId: checkpointIdOf('rollback', positionals[1]),
	}
}

const FORK_VALUED = ['--count', '-n', '--keep-alive-ms']

/** `fork`'s own flags, then run's sandbox flags (all but `--workspace`) for every fork. */
function splitFork(rest: readonly string[]) {
	const own = new Map<string, string>()
	const positionals: string[] = []
	const sandboxFlags = new SandboxFlagCollector('fork')
	let allowNetwork = false
	let isolation: 'bubblewrap' | 'none' = 'bubblewrap'
	for (let index = 0; index < rest.length; index++) {
		const arg = rest[index] ?? ''
		if (FORK_VALUED.includes(arg)) {
			const value = rest[++index]
			if (value === undefined || value === '') throw new CliUsageError(`${arg} needs a value`)
			own.set(arg, value)
		} else if (arg === '--allow-network') allowNetwork = true
		else if (arg === '--no-isolation') isolation = 'none'
		else if (arg === '--workspace')
			// The library refuses `from` with a workingDirectory: a fork's workspace is its own copy.
			throw new CliUsageError("--workspace: a fork gets a fresh copy of the checkpoint's files")
		else if (arg.startsWith('-')) {
			const used = sandboxFlags.take(arg, rest[index + 1])
			if (used === 0) throw unknownOption('fork', arg, [...FORK_VALUED, ...SANDBOX_FLAG_NAMES])
			index += used - 1
		} else positionals.push(arg)
	}
	const flags = sandboxFlags.result({ allowNetwork, isolation })
	if (flags.tier === 'container')
		throw new CliUsageError(
			'fork: forks are kept-alive sandboxes, local only (no --tier container)',
		)
	return { own, positionals, sandbox: { allowNetwork, isolation, ...flags } }
}

export function parseFork(rest: readonly string[]): CheckpointVerb {
	const { own, positionals, sandbox } = splitFork(rest)
	exactly('fork', positionals, 1, 'a CHECKPOINT id')
	const countText = own.get('--count') ?? own.get('-n')
	const count =
		countText === undefined
			? 1
			: requireIntegerText(FLAG_SITE, '--count', countText, { min: 1, max: MAX_FORK_COUNT })
	const keepAliveText = own.get('--keep-alive-ms')
	return {
		kind: 'fork',
		checkpointId: checkpointIdOf('fork', positionals[0]),
		count,
		sandbox,
		...(keepAliveText === undefined
			? {}
			: {
					keepAliveMs: requireIntegerText(FLAG_SITE, '--keep-alive-ms', keepAliveText, {
						min: MIN_KEEP_ALIVE_MS,
						max: MAX_KEEP_ALIVE_MS,
					}),
				}),
	}
}
