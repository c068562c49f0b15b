import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/** Every relative link in README.md must resolve in the tarball npm users install. */
const root = join(import.meta.dirname, '..', '..')

function readmeLinks(): string[] {
	const readme = readFileSync(join(root, 'README.md'), 'utf8')
	const links = new Set<string>()
	for (const match of readme.matchAll(/\]\(([^)\s]+)\)/g)) {
		const target = (match[1] ?? '').split('#')[0] ?? ''
		if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue
		links.add(target.replace(/^\.\//, '').replace(/\/$/, ''))
	}
	return [...links]
}

function packedFiles(): string[] {
	// npm pack's JSON lists the packed files; scripts are skipped so nothing is built here.
	const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
		cwd: root,
		encoding: 'utf8',
		maxBuffer: 64 * 1024 * 1024,
	})
	const [pack] = JSON.parse(out) as { files: { path: string }[] }[]
	return (pack?.files ?? []).map((file) => file.path)
}

describe('README links', () => {
	it('every relative link in README.md is in the packed tarball', { timeout: 120_000 }, () => {
		const links = readmeLinks()
		expect(links).toContain('SECURITY.md')
		expect(links).toContain('docs/troubleshooting.md')
		const files = packedFiles()
		const dead = links.filter(
			(link) => !files.includes(link) && !files.some((file) => file.startsWith(`${link}/`)),
		)
		expect(dead).toEqual([])
	})
})
