import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * Only a backend builds a `tcp` agent handle (`{ kind: 'tcp', host, … }`): the host, contract, wire
 * and CLI code take one as given. The agent's own `{ kind: 'tcp', port }` listen mode is not a
 * handle (it has no host). Tests build tcp handles freely to reach agents they started.
 */
const src = join(import.meta.dirname, '..', '..', 'src')
const TCP_HANDLE_LITERAL = /kind:\s*'tcp'(?:\s+as\s+const)?\s*,\s*host\b/

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

function constructingFiles(): string[] {
	return sourceFiles(src)
		.filter((file) => TCP_HANDLE_LITERAL.test(readFileSync(file, 'utf8')))
		.map((file) => relative(src, file))
}

describe('tcp agent handles', () => {
	it('are constructed nowhere in src/ outside src/backends/', () => {
		const files = constructingFiles()
		// The scan does see a construction where there is one.
		expect(files).toContain('backends/kubernetes/kubernetes-sandbox-provider.ts')
		expect(files.filter((file) => !file.startsWith('backends/'))).toEqual([])
	})
})
