import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The layering in ARCHITECTURE.md, enforced: which area may import which. The guest agent in
 * particular is bundled into a file that runs inside every sandbox, so it may reach only the wire.
 */
const src = join(import.meta.dirname, '..', '..', 'src')

const ALLOWED: Readonly<Record<string, readonly string[]>> = {
	wire: ['wire'],
	contract: ['contract'],
	agent: ['agent', 'wire'],
	host: ['host', 'wire', 'contract'],
	'backends/local': ['backends/local', 'host', 'wire', 'contract', 'root'],
	'backends/kubernetes': ['backends/kubernetes', 'host', 'wire', 'contract', 'root'],
	testing: ['testing', 'contract'],
	cli: ['cli', 'backends/local', 'host', 'wire', 'contract', 'root'],
	root: ['root', 'contract', 'wire', 'host', 'backends/local', 'backends/kubernetes'],
}

function areaOf(file: string): string {
	const rel = relative(src, file)
	if (rel.startsWith('backends/')) return rel.split('/').slice(0, 2).join('/')
	const [first] = rel.split('/')
	return rel.includes('/') && first ? first : 'root'
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

describe('import graph', () => {
	it('every area imports only the areas it is allowed to', () => {
		const violations: string[] = []
		for (const file of sourceFiles(src)) {
			const from = areaOf(file)
			const text = readFileSync(file, 'utf8')
			for (const match of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
				const target = resolve(dirname(file), match[1] ?? '')
				const to = areaOf(target)
				if (!ALLOWED[from]?.includes(to)) {
					violations.push(`${relative(src, file)} (${from}) imports ${match[1]} (${to})`)
				}
			}
		}
		expect(violations).toEqual([])
	})

	it('the guest agent imports nothing outside node built-ins but its own and the wire modules', () => {
		const foreign: string[] = []
		for (const file of sourceFiles(join(src, 'agent'))) {
			for (const match of readFileSync(file, 'utf8').matchAll(/from '([^.][^']*)'/g)) {
				if (!match[1]?.startsWith('node:')) foreign.push(`${relative(src, file)}: ${match[1]}`)
			}
		}
		expect(foreign).toEqual([])
	})
})
