// The first exec of a pooled sandbox, local tier (bubblewrap) unless `--tier container`: warm `create()` → first
// `exec('true')` result after a quiet spell (`--quiet-ms`, default 500: long enough for the kernel's
// cgroup migration lock to go cold), then that sandbox's second exec sent at once, then a host
// `spawn('true')` in the same round as the baseline, and one more exec of the same sandbox after
// another quiet spell (a command an agent sends seconds after the last: every one meets the cold
// lock, not just a pooled sandbox's first). `--before <dist dir>` runs the same rounds
// from another build too (e.g. a build of main before a change), alternating which goes first.
// `--tier container [--runtime runc|crun|runsc]` measures the container tier instead (root, and
// the guest image: `npm run image:build -- --rootfs-only`).
import { spawn, spawnSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { argInt, ms, printTable, summarize } from './lib.mjs'

const count = argInt('count', 20)
const quietMs = argInt('quiet-ms', 500)
const beforeIndex = process.argv.indexOf('--before')
const beforeDist = beforeIndex === -1 ? undefined : resolve(process.argv[beforeIndex + 1] ?? '')
const here = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist')
const option = (name, fallback) => {
	const index = process.argv.indexOf(`--${name}`)
	return index === -1 ? fallback : (process.argv[index + 1] ?? fallback)
}
const tier = option('tier', 'process')
const runtime = option('runtime', 'runc')

const sleep = (delayMs) => new Promise((done) => setTimeout(done, delayMs))
const timed = async (fn) => {
	const start = performance.now()
	await fn()
	return performance.now() - start
}
const spawnTrue = () =>
	new Promise((done, fail) => {
		const child = spawn('true', [], { stdio: 'ignore' })
		child.once('error', fail)
		child.once('exit', done)
	})

/** The guest image's root filesystem, for the container tier. */
function guestImage() {
	const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'scripts', 'guest-image.mjs')
	const image = spawnSync(process.execPath, [script, 'path'], { encoding: 'utf8' }).stdout.trim()
	if (image === '')
		throw new Error('the guest image is not built: npm run image:build -- --rootfs-only')
	return image
}

async function pooled(dist) {
	const { createSandboxProvider } = await import(pathToFileURL(join(dist, 'index.js')).href)
	if (tier === 'process') return createSandboxProvider({ backend: { tier, warmPoolSize: 2 } })
	if (tier !== 'container') throw new Error(`--tier: process or container, not ${tier}`)
	return createSandboxProvider({
		backend: { tier, runtime, image: guestImage(), warmPoolSize: 2 },
		layout: { outputs: { source: { type: 'inImage' } } },
	})
}

const builds = [{ label: 'this build', dist: here }]
if (beforeDist) builds.push({ label: `before (${beforeDist})`, dist: beforeDist })
for (const build of builds) {
	build.provider = await pooled(build.dist)
	build.samples = { handOut: [], first: [], steady: [], host: [], later: [] }
}

async function round(build, record) {
	await sleep(quietMs)
	const start = performance.now()
	const sandbox = await build.provider.create()
	const handOut = performance.now() - start
	const result = await sandbox.exec('true')
	const first = performance.now() - start
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	const steady = await timed(() => sandbox.exec('true'))
	const host = await timed(spawnTrue)
	await sleep(quietMs)
	const later = await timed(() => sandbox.exec('true'))
	await sandbox.destroy()
	if (!record) return
	build.samples.handOut.push(handOut)
	build.samples.first.push(first)
	build.samples.steady.push(steady)
	build.samples.host.push(host)
	build.samples.later.push(later)
}

const loadAtStart = loadavg()[0]
try {
	await sleep(3000)
	for (let i = -2; i < count; i++) {
		const order = i % 2 === 0 ? builds : [...builds].reverse()
		for (const build of order) await round(build, i >= 0)
	}
} finally {
	for (const build of builds) await build.provider.close()
}
const loadAtEnd = loadavg()[0]

const rows = []
for (const build of builds) {
	const s = Object.fromEntries(
		Object.entries(build.samples).map(([key, samples]) => [key, summarize(samples)]),
	)
	rows.push(
		`${build.label}`,
		`  hand-out (create() of a pooled sandbox)      p50 ${ms(s.handOut.p50)}  p95 ${ms(s.handOut.p95)}`,
		`  create() → first exec('true') result         p50 ${ms(s.first.p50)}  p95 ${ms(s.first.p95)}`,
		`  its second exec('true'), sent at once        p50 ${ms(s.steady.p50)}  p95 ${ms(s.steady.p95)}  (+${ms(s.steady.p50 - s.host.p50)} over the host spawn)`,
		`  host spawn('true'), same rounds              p50 ${ms(s.host.p50)}  p95 ${ms(s.host.p95)}`,
		`  a later exec('true') after another quiet     p50 ${ms(s.later.p50)}  p95 ${ms(s.later.p95)}`,
	)
}
printTable(
	`first exec of a pooled sandbox, ${tier === 'process' ? 'local tier' : `container tier (${runtime})`} (n=${count}, quiet ${quietMs} ms before each; load ${loadAtStart.toFixed(1)} → ${loadAtEnd.toFixed(1)})`,
	rows,
)
