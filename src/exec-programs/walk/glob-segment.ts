/**
 * One `/`-free piece of a glob, compiled for matching one directory-entry name. `**` alone is a
 * globstar; a piece without wildcards is a literal (so a walk can open it directly); everything
 * else becomes an anchored regular expression. Supported: `*`, `?`, `[...]` (with `!`/`^`
 * negation, ranges and `[:class:]` names) and `\` escapes. Hidden names (leading `.`) match a
 * wildcard only when `dot` is set; a piece that itself starts with a literal `.` always may.
 */

/** Serialisable: the same objects travel to the guest walk program in the plan. */
export type GlobSegment =
	| { readonly t: 'g' }
	| { readonly t: 'l'; readonly v: string }
	| { readonly t: 'r'; readonly s: string }

const POSIX_CLASSES: Readonly<Record<string, string>> = {
	alnum: 'a-zA-Z0-9',
	alpha: 'a-zA-Z',
	blank: ' \\t',
	digit: '0-9',
	lower: 'a-z',
	punct: '!-\\/:-@\\[-`{-~',
	space: '\\s',
	upper: 'A-Z',
	word: '\\w',
	xdigit: '0-9A-Fa-f',
}

function escapeOutside(c: string): string {
	return /[.*+?^${}()|[\]\\/-]/.test(c) ? `\\${c}` : c
}

function escapeInside(c: string): string {
	return /[\\\]^[-]/.test(c) ? `\\${c}` : c
}

interface ParsedClass {
	readonly source: string
	/** Index just past the closing `]`. */
	readonly end: number
}

/** Parses `[...]` starting at `start`; undefined when there is no closing bracket (then literal). */
function parseClass(piece: string, start: number): ParsedClass | undefined {
	let i = start + 1
	let negated = false
	if (piece[i] === '!' || piece[i] === '^') {
		negated = true
		i++
	}
	const items: string[] = []
	let first = true
	let previous: string | undefined
	while (i < piece.length) {
		let c = piece[i] ?? ''
		if (c === ']' && !first) {
			const body = items.join('')
			if (body === '') return { source: negated ? '[^/]' : '[^\\s\\S]', end: i + 1 }
			return { source: negated ? `[^/${body}]` : `[${body}]`, end: i + 1 }
		}
		first = false
		if (c === '[' && piece[i + 1] === ':') {
			const close = piece.indexOf(':]', i + 2)
			const name = close < 0 ? undefined : piece.slice(i + 2, close)
			const expansion = name === undefined ? undefined : POSIX_CLASSES[name]
			if (expansion !== undefined) {
				items.push(expansion)
				previous = undefined
				i = close + 2
				continue
			}
		}
		if (c === '\\' && i + 1 < piece.length) {
			i++
			c = piece[i] ?? ''
		}
		// A range `a-z`: `-` between two single characters, not first or last.
		if (c === '-' && previous !== undefined && i + 1 < piece.length && piece[i + 1] !== ']') {
			let to = piece[i + 1] ?? ''
			let skip = 2
			if (to === '\\' && i + 2 < piece.length) {
				to = piece[i + 2] ?? ''
				skip = 3
			}
			if (to.charCodeAt(0) < previous.charCodeAt(0)) {
				// A reversed range matches nothing, as in the shells.
				items.pop()
				previous = undefined
				i += skip
				continue
			}
			items.push(`-${escapeInside(to)}`)
			previous = undefined
			i += skip
			continue
		}
		items.push(escapeInside(c))
		previous = c
		i++
	}
	return undefined
}

/** Compiles one path segment of a glob. `dot` is the walk's `includeHidden`. */
export function compileGlobSegment(piece: string, dot: boolean): GlobSegment {
	if (piece === '**') return { t: 'g' }
	let source = ''
	let literal = ''
	let magic = false
	let startsWithLiteralDot: boolean | undefined
	let i = 0
	while (i < piece.length) {
		const c = piece[i] ?? ''
		if (c === '\\') {
			const next = i + 1 < piece.length ? (piece[i + 1] ?? '') : '\\'
			startsWithLiteralDot ??= next === '.'
			source += escapeOutside(next)
			literal += next
			i += 2
			continue
		}
		if (c === '*') {
			startsWithLiteralDot ??= false
			magic = true
			while (piece[i + 1] === '*') i++
			source += '[^/]*'
			i++
			continue
		}
		if (c === '?') {
			startsWithLiteralDot ??= false
			magic = true
			source += '[^/]'
			i++
			continue
		}
		if (c === '[') {
			const parsed = parseClass(piece, i)
			if (parsed) {
				startsWithLiteralDot ??= false
				magic = true
				source += parsed.source
				i = parsed.end
				continue
			}
		}
		startsWithLiteralDot ??= c === '.'
		source += escapeOutside(c)
		literal += c
		i++
	}
	if (!magic) return { t: 'l', v: literal }
	const guard = dot || startsWithLiteralDot === true ? '' : '(?!\\.)'
	return { t: 'r', s: `^${guard}${source}$` }
}
