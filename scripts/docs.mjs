// `npm run docs`: the typed API reference (TypeDoc, settings in typedoc.json) into docs/api/
// (git-ignored). It fails on a broken link, on an exported name without documentation and on a
// public type that refers to one no entry exports — except the gaps listed, one per line, in
// docs/api-doc-gaps.txt; a listed gap that is gone fails too, so the list only ever shrinks.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Application, LogLevel } from 'typedoc'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const gapsFile = join(root, 'docs/api-doc-gaps.txt')
const listUpdate = process.argv.includes('--list-gaps')

/** A warning as a stable key: `undocumented <name>` / `not-exported <name>`, or the text. */
function gapKey(message) {
	// biome-ignore lint/suspicious/noControlCharactersInRegex: strips terminal colours
	const text = message.replace(/\u001b\[[0-9;]*m/g, '').replace(/^\[warning\] /, '')
	const undocumented = /^(\S+) \(\w+\), defined in .* does not have any documentation$/.exec(text)
	if (undocumented) return `undocumented ${undocumented[1]}`
	const notExported =
		/^(\S+), defined in .* is referenced by .* but not included in the documentation$/.exec(text)
	if (notExported) return `not-exported ${notExported[1]}`
	return text
}

const app = await Application.bootstrapWithPlugins({}, undefined)
const found = new Set()
const print = app.logger.log.bind(app.logger)
app.logger.log = (message, level) => {
	if (level === LogLevel.Warn) found.add(gapKey(message))
	else print(message, level)
}
const project = await app.convert()
if (!project) process.exit(1)
app.validate(project)
if (listUpdate) {
	process.stdout.write(`${[...found].sort().join('\n')}\n`)
	process.exit(0)
}
const listed = new Set(
	readFileSync(gapsFile, 'utf8')
		.split('\n')
		.filter((line) => line !== '' && !line.startsWith('#')),
)
const unexpected = [...found].filter((key) => !listed.has(key)).sort()
const stale = [...listed].filter((key) => !found.has(key)).sort()
for (const key of unexpected) console.error(`docs: ${key}`)
for (const key of stale)
	console.error(`docs: listed in docs/api-doc-gaps.txt but no longer a gap: ${key}`)
if (unexpected.length > 0 || stale.length > 0) process.exit(1)
await app.generateOutputs(project)
if (app.logger.hasErrors()) process.exit(1)
console.log(`docs: the reference is in docs/api/ (${listed.size} known gaps listed)`)
