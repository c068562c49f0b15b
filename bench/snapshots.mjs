// Filesystem checkpoints on the local tier: checkpoint of a 100 MiB workspace vs a host `cp -a`
// of the same tree (the copy the checkpoint makes on ext4, which has no reflinks), and fork →
// first exec vs a cold create → first exec, interleaved in the same run.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, spawnAndWait, summarize } from './lib.mjs'

const count = argInt('count', 10)
const sizeMib = argInt('mib', 100)
const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-snapshots-'))
await spawnAndWait('chmod', ['711', stateDir])
const provider = createSandboxProvider({ backend: { tier: 'process', stateDir } })
const sandbox = await provider.create()
const copies = await mkdtemp(join(tmpdir(), 'namzu-bench-cp-'))
try {
	// 100 files of 1 MiB each, random (incompressible) bytes.
	const made = await sandbox.exec('sh', [
		'-c',
		`mkdir -p data && for i in $(seq 1 ${sizeMib}); do head -c 1048576 /dev/urandom > data/f$i; done`,
	])
	if (made.exitCode !== 0) throw new Error(`filling the workspace failed: ${made.stderr}`)
	const checkpointSamples = []
	const copySamples = []
	let last
	for (let i = -1; i < count; i++) {
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
	const forkSamples = []
	const coldSamples = []
	for (let i = -1; i < count; i++) {
		const forkStart = performance.now()
		const fork = await provider.create({ from: last })
		await fork.exec('true')
		const forkMs = performance.now() - forkStart
		await fork.destroy()
		const coldStart = performance.now()
		const cold = await provider.create()
		await cold.exec('true')
		const coldMs = performance.now() - coldStart
		await cold.destroy()
		if (i < 0) continue
		forkSamples.push(forkMs)
		coldSamples.push(coldMs)
	}
	const c = summarize(checkpointSamples)
	const p = summarize(copySamples)
	const f = summarize(forkSamples)
	const k = summarize(coldSamples)
	printTable(`checkpoint of a ${sizeMib} MiB workspace (n=${count}, ${last.bytes} bytes stored)`, [
		`checkpoint p50 ${ms(c.p50)} p95 ${ms(c.p95)}`,
		`host cp -a  p50 ${ms(p.p50)} p95 ${ms(p.p95)}`,
		`ratio p50 ${ratio(c.p50, p.p50)}`,
	])
	printTable(`fork of that checkpoint → first exec vs cold create → first exec (n=${count})`, [
		`fork  p50 ${ms(f.p50)} p95 ${ms(f.p95)}`,
		`cold  p50 ${ms(k.p50)} p95 ${ms(k.p95)}`,
		`ratio p50 ${ratio(f.p50, k.p50)}`,
	])
	await provider.deleteCheckpoint(last.id)
} finally {
	await sandbox.destroy()
	await provider.close()
	await rm(copies, { recursive: true, force: true })
	await rm(stateDir, { recursive: true, force: true })
}
