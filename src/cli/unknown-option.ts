/**
 * The usage error of an option a verb does not take, with a hint when it looks like one it does:
 * an API-shaped spelling (`--disk-limit-mb`, `--diskLimitMb` for `--disk`), another tool's name for
 * it (`--cpu`, `--network`), or a typo (one edit of a short name, two of a longer one). Pure.
 */
import { CliUsageError } from './cli-errors.js'

/** Spellings users reach for (the library's option names, docker's flags) and the CLI's flag. */
const ALIASES: Readonly<Record<string, string>> = {
	'--disk-limit-mb': '--disk',
	'--disk-limit': '--disk',
	'--disk-mb': '--disk',
	'--disk-size': '--disk',
	'--memory-limit-mb': '--memory',
	'--memory-limit': '--memory',
	'--memory-mb': '--memory',
	'--mem': '--memory',
	'--cpu': '--cpus',
	'--cpu-limit': '--cpus',
	'--pids-limit': '--pids',
	'--max-processes': '--pids',
	'--network': '--allow-network',
	'--net': '--allow-network',
	'--allow-all': '--allow-network',
	'--allowed-hosts': '--allow-host',
	'--host-ports': '--host-port',
	'--working-directory': '--workspace',
	'--timeout': '--timeout-ms',
	'--keep-alive': '--keep-alive-ms',
	'--env-files': '--env-file',
	'--no-bwrap': '--no-isolation',
}

/** `--diskLimitMb` → `--disk-limit-mb`; `--disk-limit-mb=64` → `--disk-limit-mb`. */
function normalized(arg: string): string {
	const name = arg.split('=', 1)[0] ?? arg
	return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)
}

/** Edits between two names: insertions, deletions, substitutions and swaps of neighbours. */
export function editDistance(a: string, b: string): number {
	const rows = [Array.from({ length: b.length + 1 }, (_, index) => index)]
	for (let i = 1; i <= a.length; i++) {
		const row = [i]
		for (let j = 1; j <= b.length; j++) {
			const above = rows[i - 1] ?? []
			const substitution = (above[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
			let best = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, substitution)
			if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
				best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1)
			}
			row.push(best)
		}
		rows.push(row)
	}
	return rows[a.length]?.[b.length] ?? 0
}

/**
 * The candidate nearest to `name` within the edits `allowed` grants that candidate, if any (the
 * first on a tie): the one typo search the CLI's command and flag hints share.
 */
export function nearest(
	name: string,
	candidates: readonly string[],
	allowed: (candidate: string) => number,
): string | undefined {
	let best: { readonly candidate: string; readonly distance: number } | undefined
	for (const candidate of candidates) {
		const distance = editDistance(name, candidate)
		if (distance <= allowed(candidate) && (best === undefined || distance < best.distance))
			best = { candidate, distance }
	}
	return best?.candidate
}

/** `message`, with ` (did you mean HINT?)` when there is a hint. */
export function withHint(message: string, hint: string | undefined): string {
	return hint === undefined ? message : `${message} (did you mean ${hint}?)`
}

/** Short names are close to everything: a typo of one is at most one edit, of `-x` none. */
const MIN_TYPO_NAME = 3
const SHORT_NAME = 5

function typoDistance(flag: string): number {
	return flag.length - 2 < SHORT_NAME ? 1 : 2
}

/** The flag of `known` that `arg` most likely meant, if one is close enough to say so. */
export function suggestFlag(arg: string, known: readonly string[]): string | undefined {
	const name = normalized(arg)
	if (known.includes(name) && name !== arg) return name
	const alias = ALIASES[name]
	if (alias !== undefined && known.includes(alias)) return alias
	if (!name.startsWith('--') || name.length - 2 < MIN_TYPO_NAME) return undefined
	const typeable = known.filter((flag) => flag.startsWith('--') && flag.length - 2 >= MIN_TYPO_NAME)
	return nearest(name, typeable, typoDistance)
}

/** `unknown option for VERB: ARG`, with `(did you mean --FLAG?)` when one of `known` fits. */
export function unknownOption(verb: string, arg: string, known: readonly string[]): CliUsageError {
	const hint = suggestFlag(arg, known)
	return new CliUsageError(withHint(`unknown option for ${verb}: ${arg}`, hint))
}
