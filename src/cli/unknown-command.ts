/**
 * The usage error of a command the CLI does not have, with a hint when it looks like one it has:
 * another tool's name for it (`ls`, `ps` and `rm` as docker spells them, `create`, `snapshot`) or
 * a typo (one edit of a short name, two of a longer one). Pure.
 */
import { CliUsageError } from './cli-errors.js'
import { nearest, withHint } from './unknown-option.js'

/** Names users reach for (docker's verbs, the library's method names) and the CLI's command. */
const ALIASES: Readonly<Record<string, string>> = {
	ls: 'sessions',
	ps: 'sessions',
	list: 'sessions',
	rm: 'destroy',
	remove: 'destroy',
	delete: 'destroy',
	stop: 'destroy',
	create: 'run --detach',
	start: 'run --detach',
	copy: 'cp',
	log: 'logs',
	snapshot: 'checkpoint',
	commit: 'checkpoint',
	restore: 'rollback',
	revert: 'rollback',
	clone: 'fork',
	forward: 'port',
	expose: 'port',
	terminal: 'shell',
	check: 'doctor',
	prune: 'gc',
}

/** Commands shorter than this are hinted only one edit away (a swap is one), longer ones two. */
const SHORT_COMMAND = 7

/** The command of `known` that `word` most likely meant, if one is close enough to say so. */
export function suggestCommand(word: string, known: readonly string[]): string | undefined {
	const lower = word.toLowerCase()
	if (lower !== word && known.includes(lower)) return lower
	const alias = ALIASES[lower]
	if (alias !== undefined && known.includes(alias.split(' ', 1)[0] ?? alias)) return alias
	if (lower.length < 2 || lower.startsWith('-')) return undefined
	return nearest(lower, known, (command) => (command.length < SHORT_COMMAND ? 1 : 2))
}

/** `unknown command: WORD`, with `(did you mean COMMAND?)` when one of `known` fits. */
export function unknownCommand(word: string, known: readonly string[]): CliUsageError {
	const hint = suggestCommand(word, known)
	return new CliUsageError(withHint(`unknown command: ${word}`, hint))
}
