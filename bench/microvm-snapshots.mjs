// Memory checkpoints on the QEMU microVM tier (TCG here): a fork from a memory checkpoint → first
// exec vs a cold create (boot) → first exec, interleaved in the same run; the checkpoint's pause;
// and the disk one fork costs (its own copies of the root overlay and workspace disk).
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 3)
const config = { memoryLimitMb: 512, diskLimitMb: 64 }
const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-vmsnap-'))
const provider = createSandboxProvider({ backend: { tier: 'microvm', service: 'qemu', stateDir } })
const parent = await provider.create(config)
try {
	await parent.exec('sh', ['-c', 'head -c 8388608 /dev/urandom > /workspace/data && sync'])
	const pauses = []
	let checkpoint
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		const taken = await parent.checkpoint({ kind: 'memory' })
		pauses.push(performance.now() - start)
		if (checkpoint) await provider.deleteCheckpoint(checkpoint.id)
		checkpoint = taken
	}
	const forkSamples = []
	const coldSamples = []
	let forkDiskKb = 0
	for (let i = 0; i < count; i++) {
		const forkStart = performance.now()
		const fork = await provider.create({ from: checkpoint })
		await fork.exec('true')
		forkSamples.push(performance.now() - forkStart)
		const du = duKb(fork.id)
		if (du > 0) forkDiskKb = du
		await fork.destroy()
		const coldStart = performance.now()
		const cold = await provider.create(config)
		await cold.exec('true')
		coldSamples.push(performance.now() - coldStart)
		await cold.destroy()
	}
	const p = summarize(pauses)
	const f = summarize(forkSamples)
	const k = summarize(coldSamples)
	printTable(`memory checkpoint of a 512 MiB guest, 64 MiB workspace disk (n=${count})`, [
		`checkpoint p50 ${ms(p.p50)} p95 ${ms(p.p95)}; stored ${checkpoint.bytes} bytes`,
	])
	printTable(`fork → first exec vs cold create → first exec (n=${count}, interleaved)`, [
		`fork  p50 ${ms(f.p50)} p95 ${ms(f.p95)}`,
		`cold  p50 ${ms(k.p50)} p95 ${ms(k.p95)}`,
		`ratio p50 ${ratio(f.p50, k.p50)}`,
		`one fork's own disk: ${forkDiskKb} KiB (du of its private directory)`,
	])
	await provider.deleteCheckpoint(checkpoint.id)
} finally {
	await parent.destroy()
	await provider.close()
	await rm(stateDir, { recursive: true, force: true })
}

/** What the fork's private directory (its machine's disks, console, sockets) holds on disk. */
function duKb(id) {
	const dir = readdirSync(tmpdir()).find((name) => name.startsWith(`namzu-${id}-`))
	if (dir === undefined) return 0
	return Number(
		execFileSync('du', ['-sk', join(tmpdir(), dir)], { encoding: 'utf8' }).split('\t')[0],
	)
}
