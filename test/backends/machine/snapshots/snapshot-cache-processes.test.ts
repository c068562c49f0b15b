/**
 * The snapshot cache's build lock across two real processes (current source, bundled): while one
 * process builds a key, another waits for that build and uses its entry instead of building its
 * own; a builder SIGKILLed mid-build does not hold the key: the waiter takes the lock over at once,
 * builds, and the reaper removes the dead builder's partial directory.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { staleCachedSnapshots } from '../../../../src/backends/machine/snapshots/snapshot-cache.js'
import { bundleSource, type SourceBundle } from '../../../helpers/bundle-source.js'
import { waitFor } from '../../local/local-test-support.js'
import { lockProcesses } from './snapshot-cache-support.js'

const KEY = '0123456789abcdef0123456789abcdef'
let library: SourceBundle | undefined
let script = ''
let base = ''
const children: ChildProcess[] = []
const cache = () => join(base, 'namzu-snapshot-cache')

beforeAll(async () => {
	library = await bundleSource('src/backends/machine/snapshots/snapshot-cache.ts', 'cache')
	script = join(library.dir, 'builder.mjs')
	// Builds KEY once told `go` on stdin (writing its name); prints each step as a JSON line.
	await writeFile(
		script,
		`import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cachedSnapshot } from ${JSON.stringify(library.file)}
const [base, key, name] = process.argv.slice(2)
const say = (line) => console.log(JSON.stringify(line))
const go = new Promise((resolve) => process.stdin.once('data', resolve))
say({ step: 'asking' })
const entry = await cachedSnapshot(base, key, async (dir) => {
	say({ step: 'building' })
	await go
	await writeFile(join(dir, 'state.bin'), name)
}, { buildWaitMs: 120000, maxEntries: 4 })
say({ step: 'done', ...entry })
process.exit(0)
`,
	)
})
afterAll(async () => {
	await library?.remove()
})
beforeEach(async () => {
	base = await mkdtemp(join(tmpdir(), 'namzu-snapcache-procs-'))
})
afterEach(async () => {
	for (const child of children.splice(0)) child.kill('SIGKILL')
	await rm(base, { recursive: true, force: true })
})

interface Builder {
	readonly child: ChildProcess
	readonly steps: Record<string, unknown>[]
	step(name: string): Promise<Record<string, unknown>>
}

function builder(name: string): Builder {
	const child = spawn(process.execPath, [script, base, KEY, name], {
		stdio: ['pipe', 'pipe', 'inherit'],
	})
	children.push(child)
	const steps: Record<string, unknown>[] = []
	let buffered = ''
	child.stdout?.on('data', (chunk: Buffer) => {
		buffered += chunk.toString()
		const lines = buffered.split('\n')
		buffered = lines.pop() ?? ''
		for (const line of lines) steps.push(JSON.parse(line) as Record<string, unknown>)
	})
	const step = async (wanted: string) => {
		await waitFor(
			() => steps.some((line) => line.step === wanted) || child.exitCode !== null,
			60_000,
		)
		const found = steps.find((line) => line.step === wanted)
		if (!found) throw new Error(`${name} exited (${child.exitCode}) before ${wanted}`)
		return found
	}
	return { child, steps, step }
}

/** One builder building KEY, and a second waiting on the key's lock beside the first's hold. */
async function buildingAndWaiting(first: string, second: string): Promise<[Builder, Builder]> {
	const building = builder(first)
	await building.step('building')
	const waiting = builder(second)
	await waiting.step('asking')
	await waitFor(() => lockProcesses(cache(), KEY).length >= 2, 60_000)
	return [building, waiting]
}

describe('warm-start snapshot cache: one build per key across processes', () => {
	it("a second process waits for the first's build and uses its entry", async () => {
		const [first, second] = await buildingAndWaiting('first', 'second')
		first.child.stdin?.write('go\n')
		second.child.stdin?.write('go\n')
		expect(await first.step('done')).toMatchObject({ built: true })
		expect(await second.step('done')).toMatchObject({ built: false, dir: join(cache(), KEY) })
		expect(second.steps.map((line) => line.step)).not.toContain('building')
		expect(await readFile(join(cache(), KEY, 'state.bin'), 'utf8')).toBe('first')
	}, 120_000)

	it('a builder SIGKILLed mid-build does not hold the key: the waiter takes it over and builds', async () => {
		const [dead, taker] = await buildingAndWaiting('dead', 'taker')
		const exited = new Promise((resolve) => dead.child.once('exit', resolve))
		dead.child.kill('SIGKILL')
		await exited
		await taker.step('building')
		taker.child.stdin?.write('go\n')
		expect(await taker.step('done')).toMatchObject({ built: true })
		expect(await readFile(join(cache(), KEY, 'state.bin'), 'utf8')).toBe('taker')
		// The dead builder's partial directory goes with the reaper.
		const partials = (await readdir(cache())).filter((name) => name.startsWith('.partial-'))
		expect(partials).toHaveLength(1)
		expect(await staleCachedSnapshots(base, Date.now(), false)).toEqual([
			join(cache(), partials[0] ?? ''),
		])
		await waitFor(() => lockProcesses(cache(), KEY).length === 0, 60_000)
	}, 120_000)
})
