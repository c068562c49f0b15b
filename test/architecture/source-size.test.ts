import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/**
 * The size rules of ARCHITECTURE.md, enforced: no file under src/ over 500 lines, and no function
 * over 80 lines unless the line before it says why (`// long: <reason>`). A function that reads
 * as one long closure is split into named steps over one state instead (the model:
 * `RemoteExecutionController#exec`).
 */
const src = join(import.meta.dirname, '..', '..', 'src')

const MAX_FILE_LINES = 500
const MAX_FUNCTION_LINES = 80

/**
 * Functions over the bound, each at its length today: an entry may shrink (then lower its number,
 * or remove it once under the bound) but never grow. Empty now; new long functions are not added
 * here: split them, or write the reason beside them.
 */
const ALLOWED_LONG: Readonly<Record<string, number>> = {}

/** Files still over the bound, each at its length today; the same ratchet as `ALLOWED_LONG`. */
const ALLOWED_LONG_FILES: Readonly<Record<string, number>> = {}

interface SourceFile {
	readonly path: string
	readonly text: string
}

function sourceFiles(dir: string): SourceFile[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		if (!entry.name.endsWith('.ts')) return []
		return [{ path: relative(src, path), text: readFileSync(path, 'utf8') }]
	})
}

function lineCount(text: string): number {
	return text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length
}

interface LongFunction {
	/** `path › name`: the key of `ALLOWED_LONG`. */
	readonly key: string
	readonly lines: number
	/** Whether the line before it holds `// long: <reason>`. */
	readonly explained: boolean
}

function functionName(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
	if (node.name !== undefined) return node.name.getText(file)
	if (ts.isConstructorDeclaration(node)) return 'constructor'
	const parent = node.parent
	if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
		return parent.name.getText(file)
	}
	const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1
	return `(anonymous, line ${line})`
}

/** Every function-like body over `MAX_FUNCTION_LINES` lines, from its first token to its end. */
function longFunctions(source: SourceFile): LongFunction[] {
	const file = ts.createSourceFile(source.path, source.text, ts.ScriptTarget.Latest, true)
	const lines = source.text.split('\n')
	const found: LongFunction[] = []
	const visit = (node: ts.Node): void => {
		if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
			const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line
			const last = file.getLineAndCharacterOfPosition(node.end).line
			if (last - first + 1 > MAX_FUNCTION_LINES) {
				found.push({
					key: `${source.path} › ${functionName(node as ts.FunctionLikeDeclaration, file)}`,
					lines: last - first + 1,
					explained: /\/\/ long: \S/.test(lines[first - 1] ?? ''),
				})
			}
		}
		ts.forEachChild(node, visit)
	}
	visit(file)
	return found
}

describe('source size', () => {
	const files = sourceFiles(src)
	const unexplained = files.flatMap(longFunctions).filter((found) => !found.explained)

	it(`leaves no file under src/ over ${MAX_FILE_LINES} lines`, () => {
		const over = files
			.filter((file) => lineCount(file.text) > (ALLOWED_LONG_FILES[file.path] ?? MAX_FILE_LINES))
			.map((file) => `${file.path}: ${lineCount(file.text)} lines`)
		expect(over, 'split these files by concept, one concept per file').toEqual([])
	})

	it(`finds a function over ${MAX_FUNCTION_LINES} lines, and the reason written before it`, () => {
		const body = Array.from({ length: MAX_FUNCTION_LINES }, (_, index) => `\tconst a${index} = 1`)
		const text = (reason: string) => `${reason}\nfunction tall() {\n${body.join('\n')}\n}\n`
		expect(longFunctions({ path: 'probe.ts', text: text('') })).toEqual([
			{ key: 'probe.ts › tall', lines: MAX_FUNCTION_LINES + 2, explained: false },
		])
		expect(longFunctions({ path: 'probe.ts', text: text('// long: a table') })).toEqual([
			{ key: 'probe.ts › tall', lines: MAX_FUNCTION_LINES + 2, explained: true },
		])
		const short = `const short = () => {\n${body.slice(2).join('\n')}\n}\n`
		expect(longFunctions({ path: 'probe.ts', text: short })).toEqual([])
	})

	it(`leaves no function over ${MAX_FUNCTION_LINES} lines without a \`// long:\` reason`, () => {
		const grown = unexplained
			.filter((found) => found.lines > (ALLOWED_LONG[found.key] ?? MAX_FUNCTION_LINES))
			.map((found) => `${found.key}: ${found.lines} lines`)
		expect(
			grown,
			'split these into named steps, or write `// long: <reason>` on the line before each',
		).toEqual([])
	})
})
