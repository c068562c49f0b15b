// The wire's bulk paths with and without binary data frames, against the host doing the same work
// itself, interleaved in one run on one machine: two plain agents on unix sockets — one as built,
// one with NAMZU_AGENT_BINARY_FRAMES=0 driven by a host with `binaryFrames: false` (the wire as it
// was: base64 in JSON frames, writes in 16 MiB parts as the local tier caps them) — and, per round,
// the same bytes through `fs`. For the 1 GiB rows the agent's RSS growth (peak − before, from
// /proc/<pid>/status) is taken on a fresh agent. TCP: bytes through `openTcpConnection` to a
// loopback sink against a direct loopback socket to the same sink.
import { randomFillSync } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { open, readFile, rm } from 'node:fs/promises'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'
import {
	argInt,
	loadLibrary,
	mib,
	ms,
	printTable,
	processMemory,
	ratio,
	resetPeakRss,
	startBenchAgent,
	summarize,
} from './lib.mjs'

const MiB = 1024 * 1024
const rounds = argInt('rounds', 5)
const smallMiB = argInt('size-mib', 64)
const largeMiB = argInt('large-mib', 1024)
const tcpMiB = argInt('tcp-mib', 256)
/** Which sections to run: `files`, `large`, `tcp` (default all). */
const sections = new Set(
	(process.argv.find((arg) => arg.startsWith('--sections='))?.slice(11) ?? 'files,large,tcp').split(
		',',
	),
)
const { AgentTransport, createAgentSandbox } = await loadLibrary()
// As the local tier caps request frames (MACHINE_MAX_REQUEST_FRAME_BYTES).
const REQUEST_FRAME_BYTES = 16 * MiB

async function wire(binary) {
	const chunk = process.env.NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES
	const env = {
		...(binary ? {} : { NAMZU_AGENT_BINARY_FRAMES: '0' }),
		...(chunk ? { NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES: chunk } : {}),
	}
	const agent = await startBenchAgent({ env })
	const transport = new AgentTransport(agent.handle, {
		maxRequestFrameBytes: REQUEST_FRAME_BYTES,
		binaryFrames: binary,
	})
	await transport.healthz()
	const sandbox = createAgentSandbox({
		id: binary ? 'binary' : 'json',
		transport,
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => undefined,
	})
	return { agent, transport, sandbox }
}

async function timed(fn) {
	const start = performance.now()
	await fn()
	return performance.now() - start
}

async function hostDurableWrite(path, body) {
	const handle = await open(path, 'w')
	await handle.writeFile(body)
	await handle.sync()
	await handle.close()
}

async function drain(iterable) {
	let total = 0
	for await (const chunk of iterable) total += chunk.length
	return total
}

const rows = []
const p50 = (samples) => summarize(samples).p50
/** Prints the rows gathered so far (each section as soon as it is measured). */
const flush = (title) => printTable(title, rows.splice(0))

// --- 64 MiB readFile / writeFile, interleaved rounds ---
if (sections.has('files')) {
	const sides = { binary: await wire(true), json: await wire(false) }
	const body = randomFillSync(Buffer.allocUnsafe(smallMiB * MiB))
	const samples = { bw: [], jw: [], hw: [], br: [], jr: [], hr: [] }
	const hostPath = join(sides.binary.agent.workspace, 'host.bin')
	for (let round = -1; round < rounds; round++) {
		const keep = round >= 0
		const t = {
			bw: await timed(() => sides.binary.sandbox.writeFile('blob.bin', body)),
			jw: await timed(() => sides.json.sandbox.writeFile('blob.bin', body)),
			hw: await timed(() => hostDurableWrite(hostPath, body)),
			br: await timed(async () => {
				if ((await sides.binary.sandbox.readFile('blob.bin')).length !== body.length)
					throw new Error('short')
			}),
			jr: await timed(async () => {
				if ((await sides.json.sandbox.readFile('blob.bin')).length !== body.length)
					throw new Error('short')
			}),
			hr: await timed(() => readFile(hostPath)),
		}
		if (keep) for (const key of Object.keys(t)) samples[key].push(t[key])
	}
	const [bw, jw, hw, br, jr, hr] = ['bw', 'jw', 'hw', 'br', 'jr', 'hr'].map((k) => p50(samples[k]))
	rows.push(
		`${smallMiB} MiB readFile   binary ${ms(br)} (${ratio(br, hr)})   base64/JSON ${ms(jr)} (${ratio(jr, hr)})   fs.readFile ${ms(hr)}`,
		`${smallMiB} MiB writeFile  binary ${ms(bw)} (${ratio(bw, hw)})   base64/JSON ${ms(jw)} (${ratio(jw, hw)})   fs.writeFile+fsync ${ms(hw)}   (p50 of ${rounds}, durable both)`,
	)
	for (const side of Object.values(sides)) {
		await side.sandbox.destroy()
		await side.agent.stop()
	}
	flush(`${smallMiB} MiB files, binary frames vs base64/JSON vs fs (p50 of ${rounds})`)
}

// --- 1 GiB readFileStream / writeFile, time and agent RSS growth, a fresh agent per row ---
async function measured(agent, fn) {
	const before = await processMemory(agent.pid)
	await resetPeakRss(agent.pid)
	const elapsed = await timed(fn)
	const after = await processMemory(agent.pid)
	return { elapsed, growth: after.hwm - before.rss }
}

if (sections.has('large')) {
	const body = randomFillSync(Buffer.allocUnsafe(largeMiB * MiB))
	const results = {}
	for (const binary of [true, false]) {
		const side = await wire(binary)
		const path = join(side.agent.workspace, 'big.bin')
		await hostDurableWrite(path, body)
		await drain(side.sandbox.readFileStream('big.bin', { length: MiB }))
		const stream = await measured(side.agent, async () => {
			if ((await drain(side.sandbox.readFileStream('big.bin'))) !== body.length)
				throw new Error('short')
		})
		const host = await timed(async () => {
			if ((await drain(createReadStream(path, { highWaterMark: MiB }))) !== body.length)
				throw new Error('short')
		})
		await rm(path)
		await side.sandbox.writeFile('warm.bin', 'x')
		const write = await measured(side.agent, () => side.sandbox.writeFile('big.bin', body))
		const hostWrite = await timed(() =>
			hostDurableWrite(join(side.agent.workspace, 'host.bin'), body),
		)
		results[binary ? 'binary' : 'json'] = { stream, host, write, hostWrite }
		await side.sandbox.destroy()
		await side.agent.stop()
	}
	for (const [name, r] of Object.entries(results)) {
		rows.push(
			`${largeMiB} MiB readFileStream ${name.padEnd(6)} ${ms(r.stream.elapsed)} / fs.createReadStream ${ms(r.host)} = ${ratio(r.stream.elapsed, r.host)}   agent RSS growth ${mib(r.stream.growth)}`,
			`${largeMiB} MiB writeFile      ${name.padEnd(6)} ${ms(r.write.elapsed)} / fs.writeFile+fsync ${ms(r.hostWrite)} = ${ratio(r.write.elapsed, r.hostWrite)}   agent RSS growth ${mib(r.write.growth)}`,
		)
	}
	flush(`${largeMiB} MiB through a plain agent, fresh agent per direction`)
}

// --- TCP throughput: openTcpConnection vs a direct loopback socket to the same sink ---
if (sections.has('tcp')) {
	const sink = createServer((socket) => {
		let received = 0
		socket.on('data', (chunk) => {
			received += chunk.length
			if (received >= tcpMiB * MiB) socket.end('k')
		})
		socket.on('error', () => undefined)
	})
	await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve))
	const port = sink.address().port
	const chunk = randomFillSync(Buffer.allocUnsafe(MiB))
	async function pushThrough(connection) {
		const done = new Promise((resolve) => connection.onData(() => resolve()))
		for (let i = 0; i < tcpMiB; i++) {
			if (!connection.write(chunk)) {
				await new Promise((resolve) => {
					const stop = connection.onDrain(() => {
						stop()
						resolve()
					})
				})
			}
		}
		await done
	}
	function direct() {
		return new Promise((resolve, reject) => {
			const socket = connect({ host: '127.0.0.1', port })
			socket.on('error', reject)
			socket.on('data', () => {
				socket.destroy()
				resolve()
			})
			let i = 0
			const more = () => {
				while (i < tcpMiB) {
					i++
					if (!socket.write(chunk)) return socket.once('drain', more)
				}
			}
			socket.on('connect', more)
		})
	}
	const sides = { binary: await wire(true), json: await wire(false) }
	const samples = { b: [], j: [], d: [] }
	for (let round = 0; round < Math.max(3, Math.floor(rounds / 2)); round++) {
		for (const [key, side] of [
			['b', sides.binary],
			['j', sides.json],
		]) {
			const connection = await side.sandbox.openTcpConnection({ port })
			samples[key].push(await timed(() => pushThrough(connection)))
			await connection.close()
		}
		samples.d.push(await timed(direct))
	}
	const [b, j, d] = ['b', 'j', 'd'].map((k) => p50(samples[k]))
	const rate = (t) => `${((tcpMiB / t) * 1000).toFixed(0)} MiB/s`
	rows.push(
		`TCP ${tcpMiB} MiB up   binary ${ms(b)} ${rate(b)} (${ratio(b, d)})   base64/JSON ${ms(j)} ${rate(j)} (${ratio(j, d)})   direct loopback ${ms(d)} ${rate(d)}`,
	)
	for (const side of Object.values(sides)) {
		await side.sandbox.destroy()
		await side.agent.stop()
	}
	sink.close()
	flush('TCP throughput through openTcpConnection vs a direct loopback socket')
}
