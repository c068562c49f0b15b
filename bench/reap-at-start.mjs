// Reaping at provider start: the first create() → exec('true') of a fresh local provider whose
// state directory holds what a SIGKILLed host left (LEFTOVERS sandboxes: state roots, cgroups,
// records), against the same first create() on a state directory without leftovers. Rounds are
// interleaved (the order flips each round) so both rows share the machine's load; the leftovers
// are made again before every round, outside the timing. The provider starts its reaper in the
// background once that first create() settles, so the ratio is what leftovers add to it (the
// records read, nothing waited for); the reaper's own duration, awaited, is reported beside it.
import { spawn } from 'node:child_process'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { collectLocalGarbage } from '../dist/local-entry.js'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 8)
const leftovers = argInt('leftovers', 3)
const library = new URL('../dist/index.js', import.meta.url).href

async function stateDir(name) {
	const dir = await mkdtemp(join(tmpdir(), `namzu-bench-${name}-`))
	await chmod(dir, 0o711)
	return dir
}

/** A host that creates `leftovers` sandboxes in `dir`, then is SIGKILLed. */
async function crashHost(dir) {
	const script = join(dir, '..', `namzu-bench-crash-${process.pid}.mjs`)
	await writeFile(
		script,
		`import { createSandboxProvider } from ${JSON.stringify(library)}
const provider = createSandboxProvider({ backend: { tier: 'process', stateDir: ${JSON.stringify(dir)} } })
for (let i = 0; i < ${leftovers}; i++) await provider.create()
console.log('up')
setInterval(() => undefined, 1000)
`,
	)
	const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] })
	await new Promise((resolve, reject) => {
		child.stdout.on('data', (chunk) => chunk.toString().includes('up') && resolve())
		child.once('exit', (code) => reject(new Error(`crashing host exited ${code}`)))
	})
	const exited = new Promise((resolve) => child.once('exit', resolve))
	child.kill('SIGKILL')
	await exited
	await rm(script, { force: true })
}

/** The first create() → exec('true') of a fresh provider on `dir`; close() waits for its reaper. */
async function firstCreate(dir) {
	const provider = createSandboxProvider({ backend: { tier: 'process', stateDir: dir } })
	const start = performance.now()
	const sandbox = await provider.create()
	const result = await sandbox.exec('true')
	const elapsed = performance.now() - start
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	await sandbox.destroy()
	await provider.close()
	return elapsed
}

const clean = await stateDir('clean')
const dirty = await stateDir('leftovers')
try {
	// Both directories hold a warm runtime cache before the first round.
	await firstCreate(clean)
	await firstCreate(dirty)
	const cleanSamples = []
	const dirtySamples = []
	const reapSamples = []
	for (let round = 0; round < count; round++) {
		await crashHost(dirty)
		const pair = round % 2 === 0 ? [clean, dirty] : [dirty, clean]
		for (const dir of pair) {
			const elapsed = await firstCreate(dir)
			;(dir === clean ? cleanSamples : dirtySamples).push(elapsed)
		}
		// The reaper alone, on a fresh set of leftovers, waited for.
		await crashHost(dirty)
		const start = performance.now()
		const report = await collectLocalGarbage({ stateDir: dirty })
		reapSamples.push(performance.now() - start)
		if (report.sandboxes.length !== leftovers) {
			throw new Error(`reaped ${report.sandboxes.length} of ${leftovers} leftovers`)
		}
	}
	const base = summarize(cleanSamples)
	const withLeftovers = summarize(dirtySamples)
	const reap = summarize(reapSamples)
	printTable(`first create() with ${leftovers} leftovers of a SIGKILLed host (n = ${count})`, [
		`no leftovers (baseline)        p50 ${ms(base.p50)}  p95 ${ms(base.p95)}`,
		`${leftovers} leftovers, reaped after it   p50 ${ms(withLeftovers.p50)}  p95 ${ms(withLeftovers.p95)}  ${ratio(withLeftovers.p50, base.p50)} (+${ms(withLeftovers.p50 - base.p50)})`,
		`the reaper alone, awaited       p50 ${ms(reap.p50)}  p95 ${ms(reap.p95)}  ${ratio(reap.p50, base.p50)} of a first create()`,
	])
} finally {
	await collectLocalGarbage({ stateDir: dirty }).catch(() => undefined)
	await rm(clean, { recursive: true, force: true })
	await rm(dirty, { recursive: true, force: true })
}
