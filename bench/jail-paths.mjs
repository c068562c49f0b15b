// The agent's path jail against path length: is it linear? Times the containment walk
// (`realpathOfNearest`, src/agent/files/physical-walk.ts) on paths of 1, 4 and 64 KB, and reports
// each as a ratio to the 1 KB time of the same run (linear growth reads ~4× and ~64×; the walk it
// replaced read ~6× at 4 KB and ~250× at 32 KB). Two shapes: a path whose components do not exist
// (the attack: `a/a/a/…` under the workspace) and a real directory chain (the kernel caps that at
// ~4 KB, so 1, 2 and 4 KB there). Then the whole jail (`resolveJailedPath`) at 1 and 4 KB, and the refusal of a 64 KB path,
// which never reaches the walk. The agent's modules are not in dist/, so they are bundled here.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const rounds = argInt('count', 20)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'namzu-bench-jail-'))

async function load(entry) {
	const outfile = join(scratch, `${entry.replaceAll('/', '-')}.mjs`)
	await build({
		entryPoints: [join(root, entry)],
		outfile,
		bundle: true,
		platform: 'node',
		format: 'esm',
		logLevel: 'warning',
	})
	return import(pathToFileURL(outfile).href)
}

const { realpathOfNearest } = await load('src/agent/files/physical-walk.ts')
const { resolveJailedPath } = await load('src/agent/files/jail.ts')

const workspace = join(scratch, 'ws')
const chain = join(scratch, 'chain')
mkdirSync(workspace)
mkdirSync(chain)
const config = { workspace, readRoots: [], writeRoots: [] }

/** `under/` followed by `a/a/…`, `bytes` long in all. */
function pathOf(under, bytes) {
	const tail = 'a/'.repeat(Math.ceil((bytes - under.length - 1) / 2))
	return `${under}/${tail}`.slice(0, bytes)
}

/** Nothing below the workspace exists: the walk stops at the first name. */
function missingPath(bytes) {
	return pathOf(workspace, bytes)
}

/** A real chain of one-letter directories, `bytes` long in all. */
function existingPath(bytes) {
	const path = pathOf(chain, bytes).replace(/\/$/, '')
	mkdirSync(path, { recursive: true })
	return path
}

function p50(fn) {
	return summarize(timeEachSync(rounds, fn)).p50
}

function timeEachSync(count, fn) {
	for (let i = 0; i < 3; i++) fn()
	const samples = []
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		fn()
		samples.push(performance.now() - start)
	}
	return samples
}

const rows = []
for (const [shape, make, sizes] of [
	['components that do not exist', missingPath, [1024, 4096, 65_536]],
	['a real directory chain', existingPath, [1024, 2048, 4000]],
]) {
	const times = sizes.map((bytes) => {
		const path = make(bytes)
		return [bytes, p50(() => realpathOfNearest(path))]
	})
	const [, base] = times[0]
	for (const [bytes, time] of times) {
		rows.push(
			`walk, ${shape}, ${String(bytes).padStart(6)} bytes: ${ms(time).padStart(10)}  ${ratio(time, base)} of 1 KB, length ×${(bytes / times[0][0]).toFixed(0)}`,
		)
	}
}
printTable(`containment walk, p50 of ${rounds}`, rows)

const jailRows = []
const small = missingPath(1024)
const base = p50(() => resolveJailedPath(config, small, 'read'))
for (const bytes of [1024, 4096]) {
	const path = missingPath(bytes)
	const time = p50(() => resolveJailedPath(config, path, 'read'))
	jailRows.push(`resolveJailedPath, ${bytes} bytes: ${ms(time)}  ${ratio(time, base)} of 1 KB`)
}
const huge = missingPath(65_536)
const refused = p50(() => {
	try {
		resolveJailedPath(config, huge, 'read')
	} catch {
		// path_too_long, before any filesystem call
	}
})
jailRows.push(
	`resolveJailedPath, 65536 bytes (refused): ${ms(refused)}  ${ratio(refused, base)} of 1 KB`,
)
printTable(`whole jail, p50 of ${rounds}`, jailRows)

// rm -rf: fs.rmSync recurses once per level and overflows the stack on the 2000-deep chain.
spawnSync('rm', ['-rf', scratch])
