/**
 * Shell-style brace expansion for glob patterns: `{a,b}` alternatives (nestable) and `{1..3}` /
 * `{a..e}` / `{01..10..2}` sequences. Anything that is not a well-formed set stays literal. The
 * result count is bounded, and the bound is checked before a product is built, so a hostile
 * pattern cannot make us allocate its expansion first.
 */
import { FileWalkBraceLimitError } from './walk-errors.js'

export const MAX_BRACE_EXPANSIONS = 256

interface BraceSet {
	readonly open: number
	readonly close: number
	readonly alternatives: readonly string[]
}

/** Index of the `}` that closes the `{` at `open`, honouring nesting and `\` escapes. */
function findClose(pattern: string, open: number): number {
	let depth = 0
	for (let i = open; i < pattern.length; i++) {
		const c = pattern[i]
		if (c === '\\') {
			i++
		} else if (c === '{') {
			depth++
		} else if (c === '}') {
			depth--
			if (depth === 0) return i
		}
	}
	return -1
}

/** Splits a brace body at its top-level, unescaped commas. */
function splitTopLevel(body: string): string[] {
	const parts: string[] = []
	let depth = 0
	let start = 0
	for (let i = 0; i < body.length; i++) {
		const c = body[i]
		if (c === '\\') i++
		else if (c === '{') depth++
		else if (c === '}') depth--
		else if (c === ',' && depth === 0) {
			parts.push(body.slice(start, i))
			start = i + 1
		}
	}
	parts.push(body.slice(start))
	return parts
}

const NUMERIC_SEQUENCE = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/
const CHAR_SEQUENCE = /^([^\\{},.])\.\.([^\\{},.])(?:\.\.(-?\d+))?$/

function sequenceCount(from: number, to: number, step: number): number {
	return Math.floor(Math.abs(to - from) / step) + 1
}

/** `{x..y[..step]}` as a list, or undefined when the body is not a sequence. */
function expandSequence(body: string, limit: number): string[] | undefined {
	const numeric = NUMERIC_SEQUENCE.exec(body)
	if (numeric) {
		const [, fromText = '', toText = '', stepText] = numeric
		const from = Number(fromText)
		const to = Number(toText)
		const step = Math.abs(Number(stepText ?? '1')) || 1
		if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) return undefined
		if (sequenceCount(from, to, step) > limit) throw new FileWalkBraceLimitError(limit)
		const padded = /^-?0\d/.test(fromText) || /^-?0\d/.test(toText)
		const width = padded ? Math.max(fromText.length, toText.length) : 0
		const out: string[] = []
		const direction = from <= to ? 1 : -1
		for (let n = from; direction > 0 ? n <= to : n >= to; n += direction * step) {
			const digits = String(Math.abs(n)).padStart(n < 0 ? width - 1 : width, '0')
			out.push(n < 0 ? `-${digits}` : digits)
		}
		return out
	}
	const chars = CHAR_SEQUENCE.exec(body)
	if (chars) {
		const from = (chars[1] ?? '').charCodeAt(0)
		const to = (chars[2] ?? '').charCodeAt(0)
		const step = Math.abs(Number(chars[3] ?? '1')) || 1
		if (sequenceCount(from, to, step) > limit) throw new FileWalkBraceLimitError(limit)
		const out: string[] = []
		const direction = from <= to ? 1 : -1
		for (let n = from; direction > 0 ? n <= to : n >= to; n += direction * step) {
			out.push(String.fromCharCode(n))
		}
		return out
	}
	return undefined
}

/** The first brace set (left to right) that expands; literal braces are skipped over. */
function firstSet(pattern: string, limit: number): BraceSet | undefined {
	for (let i = 0; i < pattern.length; i++) {
		const c = pattern[i]
		if (c === '\\') {
			i++
			continue
		}
		if (c !== '{') continue
		const close = findClose(pattern, i)
		if (close < 0) continue
		const body = pattern.slice(i + 1, close)
		const alternatives = splitTopLevel(body)
		if (alternatives.length > 1) return { open: i, close, alternatives }
		const sequence = expandSequence(body, limit)
		if (sequence) return { open: i, close, alternatives: sequence }
	}
	return undefined
}

function expandWithin(pattern: string, limit: number): string[] {
	const set = firstSet(pattern, limit)
	if (!set) return [pattern]
	const prefix = pattern.slice(0, set.open)
	const suffixes = expandWithin(pattern.slice(set.close + 1), limit)
	const heads: string[] = []
	for (const alternative of set.alternatives) {
		for (const expanded of expandWithin(alternative, limit)) {
			heads.push(expanded)
			if (heads.length > limit) throw new FileWalkBraceLimitError(limit)
		}
	}
	if (heads.length * suffixes.length > limit) throw new FileWalkBraceLimitError(limit)
	const out: string[] = []
	for (const head of heads) {
		for (const suffix of suffixes) out.push(prefix + head + suffix)
	}
	return out
}

/**
 * Every alternative the pattern's braces describe, in order, duplicates removed. Throws
 * `FileWalkBraceLimitError` when there would be more than `limit`.
 */
export function expandBraces(pattern: string, limit = MAX_BRACE_EXPANSIONS): string[] {
	return [...new Set(expandWithin(pattern, limit))]
}
