// 1 GiB through a plain agent on a unix socket: `readFileStream` against `fs.createReadStream` of
// the same file, and `writeFile` (parts, durable) against `fs.writeFile` + fsync of the same bytes;
// for each, the agent's RSS growth (peak during the call − RSS before it, from /proc/<pid>/status).
// A fresh agent per direction, so one measurement's heap does not carry into the other's.
import { randomFillSync } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import {
	argInt,
	loadLibrary,
	mib,
	ms,
	printTable,
	processMemory,
	ratio,
	recordHeadline,
	resetPeakRss,
	startBenchAgent,
} from './lib.mjs'

const MiB = 1024 * 1024
const sizeMiB = argInt('size-mib', 1024)
const bytes = sizeMiB * MiB
const { AgentTransport, createAgentSandbox } = await loadLibrary()

// Request frames capped as the local tier caps them (MACHINE_MAX_REQUEST_FRAME_BYTES), so a large
// write travels in 16 MiB parts and the agent holds about two frames, not the whole body.
const REQUEST_FRAME_BYTES = 16 * 1024 * 1024

function sandboxOver(agent) {
	return createAgentSandbox({
		id: 'bench',
		transport: new AgentTransport(agent.handle, { maxRequestFrameBytes: REQUEST_FRAME_BYTES }),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => undefined,
	})
}

async function drain(iterable) {
	let total = 0
	for await (const chunk of iterable) total += chunk.length
	return total
}

/** Time and agent RSS growth of `fn` against a running agent. */
async function measured(agent, fn) {
	const before = await processMemory(agent.pid)
	await resetPeakRss(agent.pid)
	const start = performance.now()
	await fn()
	const elapsed = performance.now() - start
	const after = await processMemory(agent.pid)
	return { elapsed, growth: after.hwm - before.rss, seed: before.rss }
}

const BARE = 'bare agent (a plain process on a unix socket, no sandbox)'
const body = randomFillSync(Buffer.allocUnsafe(bytes))
const rows = []

// --- readFileStream ---
{
	const agent = await startBenchAgent()
	try {
		const path = join(agent.workspace, 'big.bin')
		const handle = await open(path, 'w')
		await handle.writeFile(body)
		await handle.close()
		const sandbox = sandboxOver(agent)
		// Warm the path once with a small read, so the seed RSS includes a served stream.
		await drain(sandbox.readFileStream('big.bin', { length: MiB }))
		const read = await measured(agent, async () => {
			const got = await drain(sandbox.readFileStream('big.bin'))
			if (got !== bytes) throw new Error(`short stream: ${got}`)
		})
		const hostStart = performance.now()
		const hostGot = await drain(createReadStream(path, { highWaterMark: MiB }))
		const host = performance.now() - hostStart
		if (hostGot !== bytes) throw new Error('short host read')
		const throughput = (t) => `${((bytes / MiB / t) * 1000).toFixed(0)} MiB/s`
		rows.push(
			`readFileStream ${sizeMiB} MiB   ${ms(read.elapsed)} (${throughput(read.elapsed)})   fs.createReadStream ${ms(host)} (${throughput(host)})   ratio ${ratio(read.elapsed, host)}`,
			`  agent RSS: seed ${mib(read.seed)}, growth during the stream ${mib(read.growth)} (aim ≤ 8 MiB)`,
		)
		recordHeadline({
			figure: `${sizeMiB} MiB \`readFileStream\``,
			tier: BARE,
			path: '`readFileStream` drained by the host',
			n: 1,
			p50: read.elapsed,
			baseline: { label: 'host `fs.createReadStream`', p50: host },
			aim: '≤ 2×',
		})
		recordHeadline({
			figure: `agent RSS growth, ${sizeMiB} MiB \`readFileStream\``,
			tier: BARE,
			path: 'peak − before, `/proc/<agent>/status`',
			n: 1,
			p50: read.growth / MiB,
			unit: 'MiB',
			aim: '≤ 8 MiB',
		})
		await sandbox.destroy()
	} finally {
		await agent.stop()
	}
}

// --- writeFile (parts) ---
{
	const agent = await startBenchAgent()
	try {
		const sandbox = sandboxOver(agent)
		await sandbox.writeFile('warm.bin', 'x')
		const write = await measured(agent, () => sandbox.writeFile('big.bin', body))
		const hostPath = join(agent.workspace, 'host-copy.bin')
		const hostStart = performance.now()
		const handle = await open(hostPath, 'w')
		await handle.writeFile(body)
		await handle.sync()
		await handle.close()
		const host = performance.now() - hostStart
		await rm(hostPath)
		const throughput = (t) => `${((bytes / MiB / t) * 1000).toFixed(0)} MiB/s`
		rows.push(
			`writeFile ${sizeMiB} MiB (parts) ${ms(write.elapsed)} (${throughput(write.elapsed)})   fs.writeFile+fsync ${ms(host)} (${throughput(host)})   ratio ${ratio(write.elapsed, host)}`,
			`  agent RSS: seed ${mib(write.seed)}, growth during the write ${mib(write.growth)}`,
		)
		recordHeadline({
			figure: `agent RSS growth, ${sizeMiB} MiB durable \`writeFile\``,
			tier: BARE,
			path: '`writeFile` in 16 MiB request frames; peak − before',
			n: 1,
			p50: write.growth / MiB,
			unit: 'MiB',
			aim: '≤ 32 MiB',
		})
		await sandbox.destroy()
	} finally {
		await agent.stop()
	}
}

printTable(`large files (${sizeMiB} MiB, plain agent on a unix socket)`, rows)
