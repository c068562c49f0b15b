/**
 * A walk pattern, planned: validated, brace-expanded, normalised and compiled into segment lists,
 * with the facts a walk uses to stay small (the literal directory prefix every alternative shares
 * and the deepest level any alternative can reach).
 */
import { expandBraces, MAX_BRACE_EXPANSIONS } from './brace-expansion.js'
import { compileGlobSegment, type GlobSegment } from './glob-segment.js'
import { FileWalkPatternError } from './walk-errors.js'

export const DEFAULT_WALK_PATTERN = '**/*'
export const MAX_WALK_PATTERN_LENGTH = 4096

export interface CompiledGlob {
	/** One segment list per distinct brace alternative. */
	readonly patterns: readonly (readonly GlobSegment[])[]
	/** Leading literal segments shared by every alternative, never including a final segment. */
	readonly prefixLength: number
	/** Deepest entry any alternative can match (direct children are 1); null when a `**` is present. */
	readonly depth: number | null
	readonly dot: boolean
}

/** Splits one expanded alternative into segments: `./`, `.` and empty segments are dropped. */
export function normalisePatternSegments(alternative: string, rawLength: number): string[] {
	if (alternative.startsWith('/') || /^[A-Za-z]:[\\/]/.test(alternative)) {
		throw new FileWalkPatternError('pattern-absolute', rawLength)
	}
	const segments = alternative.split('/').filter((segment) => segment !== '' && segment !== '.')
	if (segments.includes('..')) throw new FileWalkPatternError('pattern-parent-segment', rawLength)
	if (segments.length === 0) throw new FileWalkPatternError('pattern-empty', rawLength)
	return segments
}

function sharedLiteralPrefix(patterns: readonly (readonly GlobSegment[])[]): number {
	const first = patterns[0]
	if (!first) return 0
	const limit = Math.min(...patterns.map((segments) => segments.length)) - 1
	let length = 0
	while (length < limit) {
		const segment = first[length]
		if (segment?.t !== 'l') break
		const value = segment.v
		const shared = patterns.every((segments) => {
			const other = segments[length]
			return other?.t === 'l' && other.v === value
		})
		if (!shared) break
		length++
	}
	return length
}

/** Plans `pattern` (default `**\/*`). Throws `FileWalkPatternError` / `FileWalkBraceLimitError`. */
export function compileGlob(pattern: string, dot: boolean): CompiledGlob {
	if (pattern.length > MAX_WALK_PATTERN_LENGTH) {
		throw new FileWalkPatternError('pattern-too-long', pattern.length)
	}
	const seen = new Set<string>()
	const patterns: GlobSegment[][] = []
	for (const alternative of expandBraces(pattern, MAX_BRACE_EXPANSIONS)) {
		const segments = normalisePatternSegments(alternative, pattern.length)
		const key = segments.join('/')
		if (seen.has(key)) continue
		seen.add(key)
		patterns.push(segments.map((segment) => compileGlobSegment(segment, dot)))
	}
	const depth = patterns.some((segments) => segments.some((segment) => segment.t === 'g'))
		? null
		: Math.max(...patterns.map((segments) => segments.length))
	return { patterns, prefixLength: sharedLiteralPrefix(patterns), depth, dot }
}
