// 1 GiB through a real local-tier sandbox (bubblewrap, the agent over its socket; `--bare`: a plain
// agent process on a unix socket instead, labelled so): `readFileStream` against
// `fs.createReadStream` of the same file, and the durable `writeFile` against `fs.writeFile` +
// fsync of the same bytes into the same filesystem; for each, the agent's RSS growth (its peak
// during the call − its RSS before it, from /proc/<agent pid>/status, the peak reset first).
// A fresh sandbox (agent) per direction, so one measurement's heap does not carry into the other's.
import { randomFillSync } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import {
	argInt,
	durableWrite,
	loadLibrary,
	mib,
	ms,
	percentile,
	printTable,
	processMemory,
	ratio,
	recordHeadline,
	resetPeakRss,
	sandboxAgentPid,
	startBenchAgent,
} from './lib.mjs'

const MiB = 1024 * 1024
const sizeMiB = argInt('size-mib', 1024)
/** Streams timed against as many host reads (at least 2: the first and the one measured again). */
const rounds = Math.max(2, argInt('rounds', 3))
const bytes = sizeMiB * MiB
const bare = process.argv.includes('--bare')
const TIER = bare
	? 'bare agent (a plain process on a unix socket, no sandbox)'
	: 'local (bubblewrap)'

/** A sandbox, its agent's pid and its workspace on the host, and how to end it. */
async function startTarget() {
	if (bare) {
		const { AgentTransport, createAgentSandbox } = await loadLibrary()
		const agent = await startBenchAgent()
		// Request frames capped as the local tier caps them (MACHINE_MAX_REQUEST_FRAME_BYTES).
		const transport = new AgentTransport(agent.handle, { maxRequestFrameBytes: 16 * MiB })
		const sandbox = createAgentSandbox({
			id: 'bench',
			transport,
			rootDir: agent.workspace,
			environment: 'basic',
			release: async () => undefined,
		})
		const stop = async () => {
			await sandbox.destroy()
			await agent.stop()
		}
		return { sandbox, pid: agent.pid, workspace: agent.workspace, stop }
	}
	const { createSandboxProvider } = await import('../dist/index.js')
	const provider = createSandboxProvider({ backend: { tier: 'process' } })
	const sandbox = await provider.create()
	const stop = async () => {
		await sandbox.destroy()
		await provider.close()
	}
	return { sandbox, pid: await sandboxAgentPid(), workspace: sandbox.rootDir, stop }
}

async function timedHostRead(path) {
	const start = performance.now()
	const got = await drain(createReadStream(path, { highWaterMark: MiB }))
	if (got !== bytes) throw new Error('short host read')
	return performance.now() - start
}

async function drain(iterable) {
	let total = 0
	for await (const chunk of iterable) total += chunk.length
	return total
}

/** Time and agent RSS growth of `fn`: the peak (VmHWM, reset before) − VmRSS before. */
async function measured(pid, fn) {
	const before = await processMemory(pid)
	await resetPeakRss(pid)
	const start = performance.now()
	await fn()
	const elapsed = performance.now() - start
	const after = await processMemory(pid)
	return { elapsed, growth: after.hwm - before.rss, seed: before.rss }
}

const throughput = (t) => `${((bytes / MiB / t) * 1000).toFixed(0)} MiB/s`
const body = randomFillSync(Buffer.allocUnsafe(bytes))
const rows = []

// --- readFileStream ---
{
	const target = await startTarget()
	try {
		const path = join(target.workspace, 'big.bin')
		await durableWrite(path, body)
		// Warm the path once with a small read, so the seed RSS includes a served stream.
		await drain(target.sandbox.readFileStream('big.bin', { length: MiB }))
		// Each stream is timed beside a host read of the same file, interleaved, so the ratio (p50
		// of `--rounds` each) compares samples taken under the same load.
		const streamOnce = async () => {
			const got = await drain(target.sandbox.readFileStream('big.bin'))
			if (got !== bytes) throw new Error(`short stream: ${got}`)
		}
		const read = await measured(target.pid, streamOnce)
		const hosts = [await timedHostRead(path)]
		// The same stream again on the same agent: the first one also pays one-time costs (the JIT's
		// first optimizing compiles, their code pages and zones), this one only what a stream holds.
		const again = await measured(target.pid, streamOnce)
		hosts.push(await timedHostRead(path))
		const streams = [read.elapsed, again.elapsed]
		while (streams.length < rounds) {
			const start = performance.now()
			await streamOnce()
			streams.push(performance.now() - start)
			hosts.push(await timedHostRead(path))
		}
		const stream = percentile(streams, 50)
		const host = percentile(hosts, 50)
		rows.push(
			`readFileStream ${sizeMiB} MiB   p50 of ${streams.length} ${ms(stream)} (${throughput(stream)}; the first ${ms(read.elapsed)})   fs.createReadStream p50 of ${hosts.length} ${ms(host)} (${throughput(host)})   ratio ${ratio(stream, host)}`,
			`  agent RSS: seed ${mib(read.seed)}, growth during the stream ${mib(read.growth)} (aim ≤ 8 MiB)`,
			`  the same stream again: ${ms(again.elapsed)}, agent RSS seed ${mib(again.seed)}, growth ${mib(again.growth)}`,
		)
		recordHeadline({
			figure: `${sizeMiB} MiB \`readFileStream\``,
			tier: TIER,
			path: '`sandbox.readFileStream` drained by the host (the first stream of a fresh agent included)',
			n: streams.length,
			p50: stream,
			baseline: { label: 'host `fs.createReadStream` of the same file', p50: host },
			aim: '≤ 2×',
		})
		recordHeadline({
			figure: `agent RSS growth, ${sizeMiB} MiB \`readFileStream\``,
			tier: TIER,
			path: 'the first large stream of a fresh agent; peak − before, `/proc/<agent>/status`',
			n: 1,
			p50: read.growth / MiB,
			unit: 'MiB',
			aim: '≤ 8 MiB',
		})
		recordHeadline({
			figure: `agent RSS growth, ${sizeMiB} MiB \`readFileStream\`, again`,
			tier: TIER,
			path: 'the same stream again on the same agent; peak − before',
			n: 1,
			p50: again.growth / MiB,
			unit: 'MiB',
			aim: '≤ 8 MiB',
		})
	} finally {
		await target.stop()
	}
}

// --- writeFile ---
{
	const target = await startTarget()
	try {
		await target.sandbox.writeFile('warm.bin', 'x')
		const write = await measured(target.pid, () => target.sandbox.writeFile('big.bin', body))
		// The baseline writes into the same filesystem (the workspace's), so both pay its fsync.
		const hostPath = join(target.workspace, 'host-copy.bin')
		const hostStart = performance.now()
		await durableWrite(hostPath, body)
		const host = performance.now() - hostStart
		await rm(hostPath)
		rows.push(
			`writeFile ${sizeMiB} MiB ${ms(write.elapsed)} (${throughput(write.elapsed)})   fs.writeFile+fsync ${ms(host)} (${throughput(host)})   ratio ${ratio(write.elapsed, host)}`,
			`  agent RSS: seed ${mib(write.seed)}, growth during the write ${mib(write.growth)} (aim ≤ 32 MiB)`,
		)
		recordHeadline({
			figure: `${sizeMiB} MiB durable \`writeFile\``,
			tier: TIER,
			path: '`sandbox.writeFile` (temp sibling, fsync, rename)',
			n: 1,
			p50: write.elapsed,
			baseline: { label: 'host `fs.writeFile` + `fsync`, same filesystem', p50: host },
		})
		recordHeadline({
			figure: `agent RSS growth, ${sizeMiB} MiB durable \`writeFile\``,
			tier: TIER,
			path: '`sandbox.writeFile`; peak − before, `/proc/<agent>/status`',
			n: 1,
			p50: write.growth / MiB,
			unit: 'MiB',
			aim: '≤ 32 MiB',
		})
	} finally {
		await target.stop()
	}
}

printTable(`large files (${sizeMiB} MiB, ${TIER})`, rows)
