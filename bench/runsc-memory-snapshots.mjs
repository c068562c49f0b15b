// gVisor (container tier, runtime 'runsc') memory checkpoints, all in one run, interleaved round by
// round so every ratio compares samples taken under the same load:
// - memory fork → first exec: `create({ from })` of a memory checkpoint (runsc restore, SIGUSR2,
//   the socket adopted, healthz, `restored`) until `exec('true')` has answered;
// - cold create → first exec: `create()` of the same provider until `exec('true')` has answered;
// - the memory checkpoint itself (the parent stopped, imaged, its workspace copied, and restored).
// Usage: npm run build && node bench/runsc-memory-snapshots.mjs [--count 10] [--runsc PATH]
// (`--runsc`: another runsc binary, as `backend.runtimePath`; default the provider's, /usr/bin/runsc)
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createContainerSandboxProvider } from '../dist/backends/container/index.js'
import { argInt, containerBenchImage, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 10)
const runscIndex = process.argv.indexOf('--runsc')
const runtimePath = runscIndex < 0 ? undefined : process.argv[runscIndex + 1]
const image = containerBenchImage()

const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-runsc-memory-'))
await chmod(stateDir, 0o711)
const provider = createContainerSandboxProvider(
	{ tier: 'container', runtime: 'runsc', image, stateDir, ...(runtimePath ? { runtimePath } : {}) },
	{ outputs: { source: { type: 'inImage' } } },
)
const load = () =>
	loadavg()
		.map((value) => value.toFixed(2))
		.join(' ')

async function firstExec(make) {
	const start = performance.now()
	const sandbox = await make()
	const result = await sandbox.exec('true')
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	const elapsed = performance.now() - start
	await sandbox.destroy()
	return elapsed
}

const samples = { fork: [], cold: [], checkpoint: [] }
const loadBefore = load()
const parent = await provider.create()
try {
	// A running process in the image, as a fork of a working sandbox would carry.
	await parent.startDetached({
		sessionId: 'counter',
		command: 'sh',
		args: ['-c', 'i=0; while :; do echo $i > counter; i=$((i+1)); sleep 0.1; done'],
	})
	let checkpoint
	for (let round = -2; round < count; round++) {
		const keep = round >= 0
		const checkpointStart = performance.now()
		const taken = await parent.checkpoint({ kind: 'memory' })
		const checkpointMs = performance.now() - checkpointStart
		if (checkpoint) await provider.deleteCheckpoint(checkpoint.id)
		checkpoint = taken
		const forkMs = await firstExec(() => provider.create({ from: checkpoint }))
		const coldMs = await firstExec(() => provider.create())
		if (!keep) continue
		samples.checkpoint.push(checkpointMs)
		samples.fork.push(forkMs)
		samples.cold.push(coldMs)
	}
	if (checkpoint) await provider.deleteCheckpoint(checkpoint.id)
} finally {
	await parent.destroy()
	await provider.close()
	await rm(stateDir, { recursive: true, force: true })
}

const fork = summarize(samples.fork)
const cold = summarize(samples.cold)
const checkpointed = summarize(samples.checkpoint)
printTable(
	`runsc memory snapshots (${runtimePath ?? 'the default runsc'}, n=${count}, interleaved; load ${loadBefore} → ${load()})`,
	[
		`memory fork: create({ from }) → first exec  p50 ${ms(fork.p50)} p95 ${ms(fork.p95)}`,
		`cold create() → first exec                 p50 ${ms(cold.p50)} p95 ${ms(cold.p95)}`,
		`ratio fork / cold p50 ${ratio(fork.p50, cold.p50)}`,
		`checkpoint({ kind: 'memory' }) (parent stopped, imaged, workspace copied, restored)  p50 ${ms(checkpointed.p50)} p95 ${ms(checkpointed.p95)}`,
	],
)
