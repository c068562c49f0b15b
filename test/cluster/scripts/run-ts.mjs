// Runs one of test/cluster's TypeScript entry points under plain Node 20: esbuild bundles it (npm
// packages stay external) into a temporary .mjs next to the entry, which is imported and removed.
// This keeps `npm run cluster:*` free of any extra TypeScript runner package.
import { rmSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'

const [entry, ...rest] = process.argv.slice(2)
if (entry === undefined) {
	console.error('usage: node test/cluster/scripts/run-ts.mjs <entry.ts> [args...]')
	process.exit(2)
}
const source = resolve(entry)
const outfile = join(dirname(source), `.${basename(source, '.ts')}.${process.pid}.bundle.mjs`)
await build({
	entryPoints: [source],
	outfile,
	bundle: true,
	platform: 'node',
	format: 'esm',
	target: 'node20',
	packages: 'external',
	logLevel: 'warning',
	banner: {
		js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
	},
})
process.argv = [process.argv[0] ?? 'node', source, ...rest]
try {
	const module = await import(pathToFileURL(outfile).href)
	rmSync(outfile, { force: true })
	if (typeof module.main === 'function') process.exitCode = await module.main(rest)
} catch (error) {
	rmSync(outfile, { force: true })
	throw error
}
