/**
 * Refusal codes are defined once (`src/wire/refusals.ts`): the agent emits every refusal through
 * `AGENT_REFUSAL` and never spells a code itself, every code defined is one the agent emits, and
 * the host, the tiers and the CLI never match refusal text — they read the typed code.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { AGENT_REFUSAL_CODES } from '../../src/wire/refusals.js'

const src = join(import.meta.dirname, '..', '..', 'src')

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

/** Source without comments, so prose that names a code is not mistaken for a use. */
function code(file: string): string {
	return readFileSync(file, 'utf8')
		.replace(/\/\*[\s\S]*?\*\//g, '')
		.replace(/^\s*\/\/.*$/gm, '')
}

const CODES: ReadonlySet<string> = new Set(AGENT_REFUSAL_CODES)

/** `'code'`, `"code"`, `` `code` `` or `` `code: …` `` spelled out as a literal. */
function spelledCodes(text: string): string[] {
	const found: string[] = []
	for (const match of text.matchAll(/(['"`])([a-z][a-z0-9_]*[a-z0-9])(?:\1|: )/g)) {
		const candidate = match[2] ?? ''
		if (CODES.has(candidate)) found.push(candidate)
	}
	return found
}

/**
 * Text matching on what looks like refusal text: `.startsWith('…')`, `.includes('…')` or
 * `.endsWith('…')` on a literal holding a snake_case code or a phrase, or equality against a code.
 */
function refusalTextMatches(text: string): string[] {
	const found: string[] = []
	for (const match of text.matchAll(/\.(startsWith|includes|endsWith)\(\s*(['"`])([^'"`]*)\2/g)) {
		const literal = match[3] ?? ''
		if (/[a-z]_[a-z]/.test(literal) || /[a-z] [a-z]/i.test(literal)) found.push(match[0])
	}
	for (const match of text.matchAll(/[!=]==\s*(['"`])([a-z][a-z0-9_]*[a-z0-9])\1/g)) {
		if (CODES.has(match[2] ?? '')) found.push(match[0])
	}
	return found
}

describe('refusal codes', () => {
	const agentFiles = [
		...sourceFiles(join(src, 'agent')),
		join(src, 'wire', 'frame.ts'),
		join(src, 'wire', 'frame-reader.ts'),
	]

	it('the agent spells no refusal code itself: every one comes from AGENT_REFUSAL', () => {
		const spelled = agentFiles.flatMap((file) =>
			spelledCodes(code(file)).map((found) => `${relative(src, file)}: ${found}`),
		)
		expect(spelled).toEqual([])
	})

	it('every code AGENT_REFUSAL defines is one the agent emits', () => {
		const used = new Set(
			agentFiles.flatMap((file) =>
				[...code(file).matchAll(/AGENT_REFUSAL\.([a-z0-9_]+)/g)].map((match) => match[1]),
			),
		)
		expect(AGENT_REFUSAL_CODES.filter((refusal) => !used.has(refusal))).toEqual([])
	})

	it('the host, the tiers and the CLI match no refusal text', () => {
		const files = ['host', 'backends', 'cli'].flatMap((area) => sourceFiles(join(src, area)))
		const matches = files.flatMap((file) =>
			refusalTextMatches(code(file)).map((found) => `${relative(src, file)}: ${found}`),
		)
		expect(matches).toEqual([])
	})

	it.each([
		["guestError.startsWith('path_escape')", 1],
		["guestError.includes('escapes the workspace')", 1],
		["refusal === 'quiesce_unconfirmed'", 1],
		["error.refusal !== 'unknown_session'", 1],
		["path.startsWith('/')", 0],
		["controller.startsWith('name=')", 0],
		["key.includes('=')", 0],
		["event.reason === 'slow_reader'", 0],
		['refusal.known === AGENT_REFUSAL.execution_not_reserved', 0],
	])('the text-matching check flags %s %i time(s)', (line, count) => {
		expect(refusalTextMatches(line)).toHaveLength(count)
	})

	it.each([
		["throw new OpRefusal('unknown_session')", 1],
		["throw new OpRefusal('read_file_range_requires_base64')", 1],
		['`session_capacity: limit 16`', 1],
		['new OpRefusal(AGENT_REFUSAL.unknown_session)', 0],
		["{ type: 'stdout_delta' }", 0],
	])('the spelled-code check flags %s %i time(s)', (line, count) => {
		expect(spelledCodes(line)).toHaveLength(count)
	})
})
