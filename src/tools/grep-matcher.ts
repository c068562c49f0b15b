/**
 * `grep`'s matching, bounded: a literal needle, or a regular expression run on a worker thread with
 * a time budget — a pattern written to backtrack without end (`(a+)+b`) is stopped and named
 * (`GrepPatternTimeoutError`) instead of taking the host process, or its event loop, with it.
 */
import { SandboxArgumentError } from '../index.js'
import { GREP_WORKERS } from './grep-worker-pool.js'
import { GrepPatternTimeoutError } from './tool-errors.js'

export interface GrepQuery {
	readonly pattern: string
	readonly regex: boolean
	readonly ignoreCase: boolean
}

export interface LineMatch {
	/** 1-based. */
	readonly line: number
	readonly text: string
}

/** Characters of a matching line that are shown. */
export const MAX_MATCH_LINE_CHARS = 300

/** Throws `SandboxArgumentError` for a regular expression that does not compile. */
export function compileGrepQuery(query: GrepQuery): RegExp {
	const source = query.regex ? query.pattern : query.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
	try {
		return new RegExp(source, query.ignoreCase ? 'i' : '')
	} catch {
		throw new SandboxArgumentError(
			'grep',
			'pattern',
			'a valid regular expression',
			'one that does not compile',
		)
	}
}

/**
 * The first `limit` lines of `text` that match, within `budgetMs` of matching time, matched on a
 * worker thread (grep-worker-pool.ts): past the budget the worker is terminated and the call
 * throws `GrepPatternTimeoutError`; `signal` ends it early with its reason.
 */
export async function matchLines(
	pattern: RegExp,
	text: string,
	limit: number,
	budgetMs: number,
	signal?: AbortSignal,
): Promise<LineMatch[]> {
	const task = { source: pattern.source, flags: pattern.flags, text, limit }
	const outcome = await GREP_WORKERS.run(task, budgetMs, signal)
	if (outcome.kind === 'timed-out') throw new GrepPatternTimeoutError(budgetMs)
	if (outcome.kind === 'aborted') throw outcome.reason
	const lines = text.split('\n')
	return outcome.indexes.map((index) => ({
		line: index + 1,
		text: (lines[index] ?? '').slice(0, MAX_MATCH_LINE_CHARS),
	}))
}
