/**
 * Matching a path one name at a time against compiled segment lists, so a walk can decide at each
 * directory whether anything below can still match (and prune it otherwise). A state is "pattern
 * p has matched its first i segments"; a `**` may match zero names (closure) or absorb one
 * non-hidden name (or any name with `dot`). The guest walk program carries the same algorithm in
 * plain JavaScript (walk-program.ts); the two are cross-checked by tests on real trees.
 */
import type { CompiledGlob } from './glob-pattern.js'
import type { GlobSegment } from './glob-segment.js'

/** Encodes (pattern p, segment i) in one number; segment counts stay far below the stride. */
const STRIDE = 65_536

export type GlobStates = ReadonlySet<number>

export interface GlobMatcher {
	readonly initial: GlobStates
	advance(states: GlobStates, name: string): GlobStates
	/** Some alternative is fully matched: a regular file here is a result. */
	accepts(states: GlobStates): boolean
	/** Some alternative still needs more names: descending into a directory here can pay off. */
	descends(states: GlobStates): boolean
}

type RuntimeSegment = { readonly t: 'g' } | { readonly t: 'l'; readonly v: string } | RegExp

function toRuntime(segment: GlobSegment): RuntimeSegment {
	return segment.t === 'r' ? new RegExp(segment.s) : segment
}

export function createGlobMatcher(glob: CompiledGlob): GlobMatcher {
	const patterns = glob.patterns.map((segments) => segments.map(toRuntime))
	const segmentAt = (state: number): RuntimeSegment | undefined =>
		patterns[Math.floor(state / STRIDE)]?.[state % STRIDE]
	const lengthOf = (state: number): number => patterns[Math.floor(state / STRIDE)]?.length ?? 0

	const closure = (states: Set<number>): Set<number> => {
		const todo = [...states]
		for (let state = todo.pop(); state !== undefined; state = todo.pop()) {
			const segment = segmentAt(state)
			if (segment !== undefined && !(segment instanceof RegExp) && segment.t === 'g') {
				const next = state + 1
				if (!states.has(next)) {
					states.add(next)
					todo.push(next)
				}
			}
		}
		return states
	}

	return {
		initial: closure(new Set(patterns.map((_, index) => index * STRIDE))),
		advance(states, name) {
			const next = new Set<number>()
			for (const state of states) {
				const segment = segmentAt(state)
				if (segment === undefined) continue
				if (segment instanceof RegExp) {
					if (segment.test(name)) next.add(state + 1)
				} else if (segment.t === 'g') {
					if (glob.dot || !name.startsWith('.')) next.add(state)
				} else if (segment.v === name) {
					next.add(state + 1)
				}
			}
			return closure(next)
		},
		accepts(states) {
			for (const state of states) if (state % STRIDE === lengthOf(state)) return true
			return false
		},
		descends(states) {
			for (const state of states) if (state % STRIDE < lengthOf(state)) return true
			return false
		},
	}
}

/** Whether a `/`-separated path relative to the walk root names a match (pure; for tests/tools). */
export function globMatchesPath(matcher: GlobMatcher, relativePath: string): boolean {
	let states = matcher.initial
	for (const name of relativePath.split('/')) {
		if (name === '') continue
		states = matcher.advance(states, name)
		if (states.size === 0) return false
	}
	return matcher.accepts(states)
}
