// A pre-auth flood against a plain agent listening on TCP 127.0.0.1 with a bind token: 1,000
// unauthenticated connections (each announcing a large frame and sending 64 KiB of it) plus 50
// slow-loris peers (one byte every 200 ms), while `healthz` is probed every 100 ms. Reports the
// agent's RSS growth (bound: NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES + 16 MiB) and healthz latency
// against the same probe on the idle agent. Loopback only; every loop is bounded and stops itself.
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import {
	argInt,
	mib,
	ms,
	printTable,
	processMemory,
	ratio,
	startBenchAgent,
	summarize,
} from './lib.mjs'

const MiB = 1024 * 1024
const floodConnections = argInt('connections', 1000)
const slowPeers = argInt('slow-peers', 50)
const batch = 50
const preauthBufferBytes = 32 * MiB
const slowLorisMs = argInt('slow-loris-ms', 6000)
/** What each flood peer sends of its announced 4 MiB frame before holding. */
const peerKiB = argInt('peer-kib', 64)

function frame(object) {
	const payload = Buffer.from(JSON.stringify(object))
	return Buffer.concat([Buffer.from(`${payload.length.toString(16).padStart(8, '0')}\n`), payload])
}

/** One healthz round trip on a fresh connection; resolves with its latency or NaN on failure. */
function healthz(port, timeoutMs = 2000) {
	return new Promise((resolve) => {
		const start = performance.now()
		const socket = connect({ host: '127.0.0.1', port })
		let got = Buffer.alloc(0)
		const timer = setTimeout(() => finish(Number.NaN), timeoutMs)
		function finish(value) {
			clearTimeout(timer)
			socket.destroy()
			resolve(value)
		}
		socket.on('connect', () => socket.write(frame({ op: 'healthz' })))
		socket.on('data', (chunk) => {
			got = Buffer.concat([got, chunk])
			const length = Number.parseInt(got.subarray(0, 8).toString(), 16)
			if (got.length >= 9 + length) {
				const reply = JSON.parse(got.subarray(9, 9 + length).toString())
				finish(reply.ok === false && !reply.retiring ? Number.NaN : performance.now() - start)
			}
		})
		socket.on('error', () => finish(Number.NaN))
		socket.on('close', () => finish(Number.NaN))
	})
}

/** An unauthenticated peer: announces a 4 MiB frame, sends `peerKiB` of it, holds until closed. */
function floodPeer(port, holdMs) {
	return new Promise((resolve) => {
		const socket = connect({ host: '127.0.0.1', port })
		const timer = setTimeout(() => socket.destroy(), holdMs)
		socket.on('connect', () => {
			socket.write(`${(4 * MiB).toString(16).padStart(8, '0')}\n{"op":"execute","body":"`)
			socket.write(
				randomBytes(peerKiB * 1024)
					.toString('hex')
					.slice(0, peerKiB * 1024),
			)
		})
		socket.on('error', () => undefined)
		socket.on('close', () => {
			clearTimeout(timer)
			resolve()
		})
	})
}

/** A slow-loris peer: one byte every 200 ms until `untilMs`, reconnecting when dropped. */
async function slowLoris(port, untilMs) {
	while (performance.now() < untilMs) {
		await new Promise((resolve) => {
			const socket = connect({ host: '127.0.0.1', port })
			const header = Buffer.from(`${(1024).toString(16).padStart(8, '0')}\n{"op":"healthz","x":"`)
			let index = 0
			const tick = setInterval(() => {
				if (performance.now() >= untilMs) return socket.destroy()
				socket.write(header.subarray(index % header.length, (index % header.length) + 1))
				index++
			}, 200)
			socket.on('error', () => undefined)
			socket.on('close', () => {
				clearInterval(tick)
				resolve()
			})
		})
	}
}

const agent = await startBenchAgent({
	tcp: true,
	env: { NAMZU_AGENT_BIND_TOKEN: randomBytes(24).toString('hex') },
})
try {
	// Baseline: healthz on the idle agent.
	const idle = []
	for (let i = 0; i < 30; i++) idle.push(await healthz(agent.port))
	const seed = (await processMemory(agent.pid)).rss

	let peakRss = seed
	let sampling = true
	const sampler = (async () => {
		while (sampling) {
			peakRss = Math.max(peakRss, (await processMemory(agent.pid)).rss)
			await new Promise((resolve) => setTimeout(resolve, 50))
		}
	})()
	const during = []
	let probing = true
	const prober = (async () => {
		while (probing) {
			during.push(await healthz(agent.port))
			await new Promise((resolve) => setTimeout(resolve, 100))
		}
	})()

	const floodStart = performance.now()
	const loris = Array.from({ length: slowPeers }, () =>
		slowLoris(agent.port, floodStart + slowLorisMs),
	)
	for (let sent = 0; sent < floodConnections; sent += batch) {
		const count = Math.min(batch, floodConnections - sent)
		await Promise.all(Array.from({ length: count }, () => floodPeer(agent.port, 400)))
	}
	await Promise.all(loris)
	const floodMs = performance.now() - floodStart
	probing = false
	await prober
	sampling = false
	await sampler
	const { hwm } = await processMemory(agent.pid)
	peakRss = Math.max(peakRss, hwm)

	const ok = during.filter((v) => !Number.isNaN(v))
	const failed = during.length - ok.length
	const idleStats = summarize(idle.filter((v) => !Number.isNaN(v)))
	const floodStats = summarize(ok)
	const growth = peakRss - seed
	const bound = preauthBufferBytes + 16 * MiB
	printTable(
		`pre-auth flood: ${floodConnections} unauthenticated (${peerKiB} KiB each) + ${slowPeers} slow-loris peers (${ms(floodMs)})`,
		[
			`agent RSS: seed ${mib(seed)}, peak growth ${mib(growth)}  (bound ${mib(bound)} = preauth buffer + 16 MiB: ${growth < bound ? 'held' : 'EXCEEDED'}, margin ${mib(bound - growth)})`,
			`healthz idle     p50 ${ms(idleStats.p50)}  p95 ${ms(idleStats.p95)}  (n=${idleStats.n})`,
			`healthz flooded  p50 ${ms(floodStats.p50)}  p95 ${ms(floodStats.p95)}  (n=${floodStats.n}, failed ${failed})   ratio p50 ${ratio(floodStats.p50, idleStats.p50)}`,
		],
	)
	if (failed > 0 || growth >= bound) process.exitCode = 1
} finally {
	await agent.stop()
}
