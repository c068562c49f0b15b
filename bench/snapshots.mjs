// Filesystem checkpoints on the local tier, in the mode this state directory gets (`reflink`,
// `volume`: the copy-on-write XFS volume on an ext4 host, or `copy`), all in one run:
// - checkpoint of a 100 MiB and a 1 GiB workspace vs a host `cp -a` of the same tree;
// - fork → first exec vs a cold create → first exec, interleaved;
// - 10 forks of one checkpoint created at once → all first execs done, vs 10 cold creates;
// - the disk each fork costs (free space of the filesystem holding the workspaces, before and
//   after 10 forks exist).
// With --disk-limit-mb N, only a sized workspace (`diskLimitMb: N`) of --mib MiB instead: its
// checkpoint vs `cp -a`, a fork of the same size → first exec vs a cold sized create, and a
// rollback, all in the same run; with --fork-disk-limit-mb M as well, a fork of that other size →
// first exec vs a cold create of that size.
// Usage: npm run build && node bench/snapshots.mjs [--count 5] [--mib 100] [--big-mib 1024] [--forks 10]
//        [--disk-limit-mb 256] [--fork-disk-limit-mb 512]
import { mkdtemp, rm, statfs } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkpointCopyMode } from '../dist/backends/machine/snapshots/cow-volume.js'
import { volumeMountPath } from '../dist/backends/machine/snapshots/snapshot-layout.js'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, mib, ms, printTable, ratio, spawnAndWait, summarize } from './lib.mjs'

const count = argInt('count', 5)
const sizes = [argInt('mib', 100), argInt('big-mib', 1024)]
const forks = argInt('forks', 10)
const diskLimitMb = argInt('disk-limit-mb', 0)
const forkDiskLimitMb = argInt('fork-disk-limit-mb', 0)
const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-snapshots-'))
await spawnAndWait('chmod', ['711', stateDir])
const mode = await checkpointCopyMode(stateDir)
const provider = createSandboxProvider({ backend: { tier: 'process', stateDir } })
const copies = await mkdtemp(join(tmpdir(), 'namzu-bench-cp-'))
const load = () =>
	loadavg()
		.map((value) => value.toFixed(2))
		.join(' ')

async function fill(sandbox, sizeMib) {
	// Files of 1 MiB each, random (incompressible) bytes.
	const made = await sandbox.exec('sh', [
		'-c',
		`mkdir -p data && for i in $(seq 1 ${sizeMib}); do head -c 1048576 /dev/urandom > data/f$i; done`,
	])
	if (made.exitCode !== 0) throw new Error(`filling the workspace failed: ${made.stderr}`)
}

/** Checkpoint vs `cp -a`, interleaved; answers the last checkpoint (the others deleted). */
async function checkpointVsCopy(sandbox, sizeMib, n) {
	const checkpointSamples = []
	const copySamples = []
	let last
	for (let i = -1; i < n; i++) {
		const start = performance.now()
		const checkpoint = await sandbox.checkpoint()
		const checkpointMs = performance.now() - start
		const copyStart = performance.now()
		await spawnAndWait('cp', ['-a', sandbox.rootDir, join(copies, `c${i + 1}`)])
		const copyMs = performance.now() - copyStart
		await rm(join(copies, `c${i + 1}`), { recursive: true, force: true })
		if (last) await provider.deleteCheckpoint(last.id)
		last = checkpoint
		if (i < 0) continue
		checkpointSamples.push(checkpointMs)
		copySamples.push(copyMs)
	}
	const c = summarize(checkpointSamples)
	const p = summarize(copySamples)
	printTable(
		`checkpoint of a ${sizeMib} MiB${diskLimitMb > 0 ? ` sized (diskLimitMb ${diskLimitMb})` : ''} workspace (n=${n}, mode ${mode.mode}, load ${load()})`,
		[
			`checkpoint p50 ${ms(c.p50)} p95 ${ms(c.p95)}`,
			`host cp -a  p50 ${ms(p.p50)} p95 ${ms(p.p95)}`,
			`ratio p50 ${ratio(c.p50, p.p50)}`,
		],
	)
	return last
}

async function forkVsCold(checkpoint, config = {}) {
	const forkSamples = []
	const coldSamples = []
	for (let i = -1; i < count; i++) {
		const forkStart = performance.now()
		const fork = await provider.create({ from: checkpoint, ...config })
		await fork.exec('true')
		const forkMs = performance.now() - forkStart
		await fork.destroy()
		const coldStart = performance.now()
		const cold = await provider.create(config)
		await cold.exec('true')
		const coldMs = performance.now() - coldStart
		await cold.destroy()
		if (i < 0) continue
		forkSamples.push(forkMs)
		coldSamples.push(coldMs)
	}
	const f = summarize(forkSamples)
	const k = summarize(coldSamples)
	const from = diskLimitMb > 0 ? ` of a diskLimitMb ${diskLimitMb} checkpoint` : ''
	const what = config.diskLimitMb ? `${from} (diskLimitMb ${config.diskLimitMb} both)` : ''
	printTable(`fork → first exec vs cold create → first exec${what} (n=${count}, load ${load()})`, [
		`fork  p50 ${ms(f.p50)} p95 ${ms(f.p95)}`,
		`cold  p50 ${ms(k.p50)} p95 ${ms(k.p95)}`,
		`ratio p50 ${ratio(f.p50, k.p50)}`,
	])
}

async function freeBytes() {
	const info = await statfs(mode.mode === 'volume' ? volumeMountPath(stateDir) : stateDir)
	return info.bfree * info.bsize
}

/** `forks` forks at once → every first exec; the free space they cost; vs as many cold creates. */
async function manyForks(checkpoint, sizeMib) {
	const before = await freeBytes()
	const start = performance.now()
	const made = await Promise.all(
		Array.from({ length: forks }, async () => {
			const fork = await provider.create({ from: checkpoint })
			await fork.exec('true')
			return fork
		}),
	)
	const forksMs = performance.now() - start
	await spawnAndWait('sync', [])
	const perFork = (before - (await freeBytes())) / forks
	await Promise.all(made.map((fork) => fork.destroy()))
	const coldStart = performance.now()
	const cold = await Promise.all(
		Array.from({ length: forks }, async () => {
			const sandbox = await provider.create()
			await sandbox.exec('true')
			return sandbox
		}),
	)
	const coldMs = performance.now() - coldStart
	await Promise.all(cold.map((sandbox) => sandbox.destroy()))
	printTable(`${forks} forks of one ${sizeMib} MiB checkpoint at once (load ${load()})`, [
		`all first execs ${ms(forksMs)}; ${forks} cold creates at once ${ms(coldMs)}; ratio ${ratio(forksMs, coldMs)}`,
		`disk per fork ${mib(perFork)} (free space of the workspaces' filesystem before/after)`,
	])
}

/** A rollback of the sized workspace (after a deletion) vs `cp -a` of it, interleaved. */
async function rollbackVsCopy(sandbox, checkpoint, sizeMib) {
	const samples = []
	const copySamples = []
	for (let i = -1; i < count; i++) {
		await sandbox.exec('rm', ['-rf', 'data'])
		const start = performance.now()
		await sandbox.rollback(checkpoint)
		const rollbackMs = performance.now() - start
		const copyStart = performance.now()
		await spawnAndWait('cp', ['-a', sandbox.rootDir, join(copies, 'r')])
		const copyMs = performance.now() - copyStart
		await rm(join(copies, 'r'), { recursive: true, force: true })
		if (i < 0) continue
		samples.push(rollbackMs)
		copySamples.push(copyMs)
	}
	const r = summarize(samples)
	const p = summarize(copySamples)
	printTable(`rollback of a ${sizeMib} MiB sized workspace (n=${count}, load ${load()})`, [
		`rollback p50 ${ms(r.p50)} p95 ${ms(r.p95)}`,
		`host cp -a p50 ${ms(p.p50)} p95 ${ms(p.p95)}`,
		`ratio p50 ${ratio(r.p50, p.p50)}`,
	])
}

async function sizedOnly() {
	const sizeMib = sizes[0]
	const config = { diskLimitMb }
	const sandbox = await provider.create(config)
	try {
		await fill(sandbox, sizeMib)
		const last = await checkpointVsCopy(sandbox, sizeMib, count)
		await forkVsCold(last, config)
		if (forkDiskLimitMb > 0) await forkVsCold(last, { diskLimitMb: forkDiskLimitMb })
		await rollbackVsCopy(sandbox, last, sizeMib)
		await provider.deleteCheckpoint(last.id)
	} finally {
		await sandbox.destroy()
	}
}

let sandbox
try {
	console.log(`mode ${mode.mode}: ${mode.why}`)
	if (diskLimitMb > 0) await sizedOnly()
	for (const [index, sizeMib] of diskLimitMb > 0 ? [] : sizes.entries()) {
		sandbox = await provider.create()
		await fill(sandbox, sizeMib)
		// The big workspace takes fewer samples: each host `cp -a` copies every byte.
		const last = await checkpointVsCopy(sandbox, sizeMib, index === 0 ? count : Math.min(count, 3))
		if (index === 0) await forkVsCold(last)
		await manyForks(last, sizeMib)
		await provider.deleteCheckpoint(last.id)
		await sandbox.destroy()
		sandbox = undefined
	}
} finally {
	await sandbox?.destroy()
	await provider.close()
	await rm(copies, { recursive: true, force: true })
	await rm(stateDir, { recursive: true, force: true })
}
