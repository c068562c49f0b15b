import { execFile } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

/**
 * Every TypeScript or JavaScript block of README.md and docs/**\/*.md compiles against the
 * package's own entry points, as a reader would paste it into a module of their own.
 */
const root = join(import.meta.dirname, '..', '..')
const BLOCK = /^```(ts|typescript|js|javascript|mjs)\n([\s\S]*?)^```/gm

function markdownFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return markdownFiles(path)
		return entry.name.endsWith('.md') ? [path] : []
	})
}

function codeBlocks(): { source: string; code: string }[] {
	return [join(root, 'README.md'), ...markdownFiles(join(root, 'docs'))].flatMap((file) =>
		[...readFileSync(file, 'utf8').matchAll(BLOCK)].map((match, index) => ({
			source: `${relative(root, file)} block ${index + 1}`,
			code: match[2] ?? '',
		})),
	)
}

describe('code blocks in README.md and docs/', () => {
	it('finds the blocks it checks', () => {
		expect(codeBlocks().length).toBeGreaterThan(10)
	})

	it('compiles every block against the package entry points', { timeout: 300_000 }, async () => {
		const dir = join(root, 'node_modules', '.cache', `namzu-doc-blocks-${process.pid}`)
		rmSync(dir, { recursive: true, force: true })
		mkdirSync(dir, { recursive: true })
		const names = new Map<string, string>()
		codeBlocks().forEach(({ source, code }, index) => {
			const name = `block-${String(index).padStart(3, '0')}.ts`
			names.set(name, source)
			// A block is a module of its own: top-level await and no name clashes between blocks.
			writeFileSync(join(dir, name), `${code}\nexport {}\n`)
		})
		const base = relative(dir, root)
		writeFileSync(
			join(dir, 'tsconfig.json'),
			JSON.stringify({
				extends: join(base, 'tsconfig.json'),
				compilerOptions: {
					noEmit: true,
					noUnusedLocals: false,
					noUnusedParameters: false,
					baseUrl: base,
					paths: {
						'@namzu/sandbox': ['src/index.ts'],
						'@namzu/sandbox/agent': ['src/agent-entry.ts'],
						'@namzu/sandbox/contract': ['src/contract-entry.ts'],
						'@namzu/sandbox/local': ['src/local-entry.ts'],
						'@namzu/sandbox/container': ['src/container-entry.ts'],
						'@namzu/sandbox/microvm': ['src/microvm-entry.ts'],
						'@namzu/sandbox/kubernetes': ['src/kubernetes-entry.ts'],
						'@namzu/sandbox/testing': ['src/testing/index.ts'],
						'@namzu/sandbox/tools': ['src/tools/index.ts'],
					},
				},
				include: ['*.ts'],
			}),
		)
		const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
		let output = ''
		try {
			await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], {
				maxBuffer: 16 * 1024 * 1024,
			})
		} catch (error) {
			output = String((error as { stdout?: string }).stdout ?? error)
		} finally {
			rmSync(dir, { recursive: true, force: true })
		}
		// Errors are reported against the block they came from, not the temporary file.
		const report = output.replace(/block-\d{3}\.ts/g, (name) => names.get(name) ?? name)
		expect(report).toBe('')
	})
})
