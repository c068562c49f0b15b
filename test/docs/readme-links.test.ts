import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * Every relative link in the shipped Markdown (README.md, SECURITY.md, docs/**) must resolve in
 * the tarball npm users install: a link is read relative to the file that holds it.
 */
const root = join(import.meta.dirname, '..', '..')

function markdownFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return entry.name === 'api' ? [] : markdownFiles(path)
		return entry.name.endsWith('.md') ? [path] : []
	})
}

const SHIPPED = () => [
	join(root, 'README.md'),
	join(root, 'SECURITY.md'),
	...markdownFiles(join(root, 'docs')),
]

/** Relative link targets of one file, as paths from the package root. */
function relativeLinks(file: string): { from: string; raw: string; target: string }[] {
	// Code blocks hold shell and TypeScript, not links.
	const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '')
	const from = relative(root, file)
	const links: { from: string; raw: string; target: string }[] = []
	for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
		const raw = match[1] ?? ''
		const path = raw.split('#')[0] ?? ''
		if (path === '' || /^[a-z][a-z0-9+.-]*:/i.test(raw)) continue
		const target = normalize(join(dirname(from), path)).replace(/\/$/, '')
		links.push({ from, raw, target })
	}
	return links
}

let packed: string[] | undefined

function packedFiles(): string[] {
	if (packed !== undefined) return packed
	// npm pack's JSON lists the packed files; scripts are skipped so nothing is built here.
	const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
		cwd: root,
		encoding: 'utf8',
		maxBuffer: 64 * 1024 * 1024,
	})
	const [pack] = JSON.parse(out) as { files: { path: string }[] }[]
	packed = (pack?.files ?? []).map((file) => file.path)
	return packed
}

describe('links in the shipped Markdown', () => {
	it('every relative link in README.md is in the packed tarball', { timeout: 120_000 }, () => {
		const links = relativeLinks(join(root, 'README.md')).map((link) => link.target)
		expect(links).toContain('SECURITY.md')
		expect(links).toContain('docs/troubleshooting.md')
		expect(links).toContain('docs/guides/container-tier.md')
		const files = packedFiles()
		const dead = links.filter(
			(link) => !files.includes(link) && !files.some((file) => file.startsWith(`${link}/`)),
		)
		expect(dead).toEqual([])
	})

	it('every relative link in SECURITY.md and docs/ resolves, from its own file, in the packed tarball', {
		timeout: 120_000,
	}, () => {
		const links = SHIPPED().flatMap(relativeLinks)
		expect(links.length).toBeGreaterThan(40)
		const files = packedFiles()
		const dead = links.filter(
			({ target }) =>
				target.startsWith('..') ||
				(!files.includes(target) && !files.some((file) => file.startsWith(`${target}/`))),
		)
		expect(dead).toEqual([])
	})

	it("no link in the shipped Markdown is an absolute path on the writer's machine", () => {
		const absolute = SHIPPED().flatMap((file) => {
			const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '')
			return [...text.matchAll(/\]\((\/[^)\s]*)\)/g)].map((m) => `${relative(root, file)}: ${m[1]}`)
		})
		expect(absolute).toEqual([])
	})
})
