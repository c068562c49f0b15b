import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * docs/requirements-coverage.md is a claim about the test suite: every line names a test that
 * exists, or a deferral with an owner, and an entry that appears at all appears whole.
 */
const root = join(import.meta.dirname, '..', '..')
const specDir = join(root, '..', 'shared', 'spec')
/** The conformance suite's sources: a file that runs it registers their case titles. */
const TESTING_DIR = join(root, 'src', 'testing')
const SUITE_SOURCE = readdirSync(TESTING_DIR)
	.filter((name) => name.endsWith('.ts'))
	.map((name) => readFileSync(join(TESTING_DIR, name), 'utf8'))
	.join('\n')
const doc = readFileSync(join(root, 'docs', 'requirements-coverage.md'), 'utf8')

interface CoverageLine {
	readonly id: string
	readonly target: string
}

const LINE = /^(R1[45]-[A-Za-z0-9]+(?:-[A-Za-z]+)?-\d{2}): (.+)$/

function coverageLines(): CoverageLine[] {
	return doc
		.split('\n')
		.map((line) => LINE.exec(line.trim()))
		.filter((match): match is RegExpExecArray => match !== null)
		.map((match) => ({ id: match[1] ?? '', target: match[2] ?? '' }))
}

function entryOf(id: string): string {
	return id.replace(/-\d{2}$/, '')
}

/** Every requirement id the spec lists, grouped by entry (`R15-feaeaba`). */
function specRequirements(): Map<string, string[]> {
	const byEntry = new Map<string, string[]>()
	for (const file of ['requirements-14.md', 'requirements-15.md']) {
		const text = readFileSync(join(specDir, file), 'utf8')
		for (const match of text.matchAll(/\*\*(R1[45]-[A-Za-z0-9]+(?:-[A-Za-z]+)?-\d{2})\*\*/g)) {
			const id = match[1] ?? ''
			const list = byEntry.get(entryOf(id)) ?? []
			if (!list.includes(id)) list.push(id)
			byEntry.set(entryOf(id), list)
		}
	}
	return byEntry
}

/** Whether `text` appears in `source` as a whole string literal: '…', "…" or `…`. */
function isQuotedIn(source: string, text: string): boolean {
	return ["'", '"', '`'].some((quote) => source.includes(`${quote}${text}${quote}`))
}

describe('docs/requirements-coverage.md', () => {
	const lines = coverageLines()

	it('has one line per requirement id', () => {
		const seen = new Set<string>()
		const duplicates = lines.filter((line) => seen.has(line.id) || !seen.add(line.id))
		expect(duplicates).toEqual([])
		expect(lines.length).toBeGreaterThan(0)
	})

	it('the title check takes a whole quoted title only', () => {
		const source = "it('refuses a slice above the bound', () => {})\n// refuses a slice"
		expect(isQuotedIn(source, 'refuses a slice above the bound')).toBe(true)
		expect(isQuotedIn(source, 'refuses a slice')).toBe(false)
		expect(isQuotedIn('it("a b c")', 'a b')).toBe(false)
	})

	it('names, on every covered line, a test file that exists and a test title found in it', () => {
		const broken: string[] = []
		for (const { id, target } of lines) {
			if (target.startsWith('deferred — ')) {
				if (target.length < 'deferred — '.length + 8) broken.push(`${id}: deferral names no owner`)
				continue
			}
			if (target.startsWith('deviation — ')) {
				if (target.length < 'deviation — '.length + 8)
					broken.push(`${id}: deviation gives no reason`)
				continue
			}
			// ` · ` starts a note after the title.
			const [file, ...titles] = (target.split(' · ')[0] ?? '').split(' › ')
			const path = join(root, file ?? '')
			if (!/\.test(-d)?\.ts$/.test(file ?? '') || !existsSync(path)) {
				broken.push(`${id}: no test file ${file}`)
				continue
			}
			const title = titles.at(-1)
			let source = readFileSync(path, 'utf8')
			// A file that runs the conformance suite registers the suite's own case titles.
			if (source.includes('defineSandboxConformance')) source += SUITE_SOURCE
			// The whole title, as the string literal that names the test: a prefix or a phrase of a
			// comment is not a test.
			if (!title || !isQuotedIn(source, title)) {
				broken.push(`${id}: no test titled exactly this in ${file}: ${title}`)
			}
		}
		expect(broken).toEqual([])
	})

	// The spec is a sibling checkout (`../shared/spec`), present on CI but not in a fresh clone of
	// this repository alone: without it the check is skipped and says so. On CI its absence fails.
	const specPresent = existsSync(specDir)
	if (!specPresent && !process.env.CI) {
		console.warn(
			`requirements coverage: ${specDir} is absent; the check against the spec is skipped`,
		)
	}

	it.skipIf(!specPresent && !process.env.CI)(
		'covers every requirement of every spec entry it mentions',
		() => {
			expect(specPresent, `${specDir} is absent; CI must run with the spec checked out`).toBe(true)
			const spec = specRequirements()
			const listed = new Set(lines.map((line) => line.id))
			const unknown = [...listed].filter((id) => !spec.get(entryOf(id))?.includes(id))
			expect(unknown).toEqual([])
			const entries = new Set([...listed].map(entryOf))
			const missing = [...entries].flatMap((entry) =>
				(spec.get(entry) ?? []).filter((id) => !listed.has(id)),
			)
			expect(missing).toEqual([])
		},
	)
})
