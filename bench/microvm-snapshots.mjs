// Memory checkpoints on the QEMU microVM tier (TCG here): a fork from a memory checkpoint → first
// exec vs a cold create (boot) → first exec, interleaved in the same run; the checkpoint's pause;
// the disk one fork costs (its own copies of the root overlay and workspace disk); and warm start
// (`startFromSnapshot`): create → first exec restored from the cached snapshot vs a cold create of
// the same guest, interleaved, plus the first warm create (which boots and saves the template).
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxProvider } from '../dist/index.js'
import { createMicroVMSandboxProvider } from '../dist/microvm-entry.js'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 3)
const config = { memoryLimitMb: 512, diskLimitMb: 64 }
const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-vmsnap-'))
// `--warm-only`: only the warm-start comparison (its own same-run cold baseline).
if (process.argv.includes('--warm-only')) {
	try {
		await warmStart()
	} finally {
		await rm(stateDir, { recursive: true, force: true })
	}
	process.exit(0)
}
const provider = createSandboxProvider({ backend: { tier: 'microvm', service: 'qemu', stateDir } })
const parent = await provider.create(config)
// Each guest's directory is a state root `namzu-sbx-<id>` in the state directory; the parent's first.
const parentDirs = new Set(guestDirs())
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
		const du = duKb(parentDirs)
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
	await parent.destroy()
	await warmStart()
} finally {
	await parent.destroy()
	await provider.close()
	await rm(stateDir, { recursive: true, force: true })
}

/** Warm start vs cold create of the same 512 MiB guest (no workspace disk), interleaved. */
async function warmStart() {
	const starts = []
	const warm = createMicroVMSandboxProvider(
		{ tier: 'microvm', service: 'qemu', stateDir, startFromSnapshot: true },
		{ defaultMemoryLimitMb: 512 },
		{ onGuestStart: (event) => starts.push(event) },
	)
	const cold = createSandboxProvider({
		backend: { tier: 'microvm', service: 'qemu', stateDir },
		defaultMemoryLimitMb: 512,
	})
	try {
		const buildStart = performance.now()
		const first = await warm.create()
		await first.exec('true')
		const build = performance.now() - buildStart
		await first.destroy()
		const warmSamples = []
		const coldSamples = []
		for (let i = 0; i < count; i++) {
			const warmAt = performance.now()
			const restored = await warm.create()
			await restored.exec('true')
			warmSamples.push(performance.now() - warmAt)
			await restored.destroy()
			const coldAt = performance.now()
			const booted = await cold.create()
			await booted.exec('true')
			coldSamples.push(performance.now() - coldAt)
			await booted.destroy()
		}
		const fromCache = starts.filter((event) => event.start === 'snapshot' && !event.snapshotBuilt)
		const w = summarize(warmSamples)
		const k = summarize(coldSamples)
		printTable(
			`warm start (startFromSnapshot) → first exec vs cold create → first exec (n=${count}, interleaved)`,
			[
				`first warm create (boots and saves the template, then restores): ${ms(build)}`,
				`warm  p50 ${ms(w.p50)} p95 ${ms(w.p95)} (${fromCache.length} of ${count} from the cache)`,
				`cold  p50 ${ms(k.p50)} p95 ${ms(k.p95)}`,
				`ratio p50 ${ratio(w.p50, k.p50)}`,
			],
		)
	} finally {
		await warm.close()
		await cold.close()
	}
}

function guestDirs() {
	return readdirSync(stateDir).filter((name) => /^namzu-sbx-[0-9a-f]{12}$/.test(name))
}

/** What a fork's private directory (its machine's disks, console, sockets) holds on disk. */
function duKb(parentDirs) {
	const dir = guestDirs().find((name) => !parentDirs.has(name))
	if (dir === undefined) return 0
	return Number(
		execFileSync('du', ['-sk', join(stateDir, dir)], { encoding: 'utf8' }).split('\t')[0],
	)
}
