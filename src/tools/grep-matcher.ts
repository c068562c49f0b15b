/**
 * `grep`'s matching, pure but bounded: a literal needle, or a regular expression run inside a
 * `vm` context with a time budget — a pattern written to backtrack without end (`(a+)+b`) is
 * stopped and named (`GrepPatternTimeoutError`) instead of taking the host process with it.
 */
import vm from 'node:vm'
import { SandboxArgumentError } from '../index.js'
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

const MATCH_SCRIPT = new vm.Script(`{
	const found = []
	const lines = text.split('\\n')
	for (let i = 0; i < lines.length && found.length < limit; i++) {
		if (pattern.test(lines[i])) found.push(i)
	}
	result = found
}`)

/** The first `limit` lines of `text` that match, within `budgetMs` of matching time. */
export function matchLines(
	pattern: RegExp,
	text: string,
	limit: number,
	budgetMs: number,
): LineMatch[] {
	const context = vm.createContext({ pattern, text, limit, result: [] as number[] })
	try {
		MATCH_SCRIPT.runInContext(context, { timeout: Math.max(1, budgetMs) })
	} catch (error) {
		if ((error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
			throw new GrepPatternTimeoutError(budgetMs)
		}
		throw error
	}
	const indexes: unknown = context.result
	const lines = text.split('\n')
	return (Array.isArray(indexes) ? indexes : [])
		.filter((index): index is number => typeof index === 'number')
		.map((index) => ({
			line: index + 1,
			text: (lines[index] ?? '').slice(0, MAX_MATCH_LINE_CHARS),
		}))
}
