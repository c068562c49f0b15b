// What a hostile guest's reply costs the host, against an honest reply of the same size in the
// same run: the host's peak RSS growth and its longest event-loop block while it reads one answer.
// Each case runs in a fresh host process (its peak RSS is its own) against a peer process that
// answers with raw frames. Cases: a control reply (healthz) of 120 MB of `[`×N `]`×N (against a
// 40 KB honest healthz); one exec stream event of 8 MiB, nested or a flat array of 4 Mi zeros
// (against an 8 MiB stdout delta of text); a whole-file read-file of 100 MB of escapes (`\n`)
// against 100 MB of base64. Usage: node bench/hostile-reply.mjs [--count 3]   (builds nothing: run npm run build)
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { argInt, mib, ms, printTable, ratio } from './lib.mjs'

const MiB = 1024 * 1024
const self = fileURLToPath(import.meta.url)
const dist = new URL('../dist/', import.meta.url)

/** Each case: the op the host asks, what the peer answers (honest and hostile), the same size. */
const CASES = {
	'healthz 120 MB': {
		op: 'healthz',
		honest: () => json({ ok: true, protocolVersion: 2, features: [], pad: 'x'.repeat(40_000) }),
		hostile: () => nested(60_000_000),
	},
	'execute event 8 MiB, nested': {
		op: 'execute',
		// Text with escapes (`y\n`, 3 bytes a pair once JSON): parsed, never a bulk string.
		honest: () => json({ type: 'stdout_delta', data: 'y\n'.repeat((8 * MiB - 64) / 3) }),
		hostile: () => nested(4 * MiB - 8),
	},
	'execute event 8 MiB, wide': {
		op: 'execute',
		honest: () => json({ type: 'stdout_delta', data: 'y\n'.repeat((8 * MiB - 64) / 3) }),
		hostile: () => [Buffer.from(`[${'0,'.repeat(4 * MiB - 8)}0]`)],
	},
	'read-file 100 MB': {
		op: 'read-file',
		honest: () => wholeFile(Buffer.alloc(100_000_000, 'Q')),
		hostile: () => wholeFile(Buffer.alloc(100_000_000, '\\n')),
	},
}

function json(message) {
	return [Buffer.from(JSON.stringify(message))]
}

function nested(depth) {
	return [Buffer.alloc(depth, '['), Buffer.alloc(depth, ']')]
}

function wholeFile(content) {
	return [Buffer.from('{"ok":true,"content":"'), content, Buffer.from('","encoding":"base64"}')]
}

/** The peer: answers healthz with no features (so a whole read is one read-file), else `parts`. */
async function peer(socketPath, caseName, variant) {
	const { FrameReader } = await import(new URL('wire/frame-reader.js', dist))
	const { parseFramePayload, encodeFrame } = await import(new URL('wire/frame.js', dist))
	const spec = CASES[caseName]
	const server = createServer((socket) => {
		socket.on('error', () => undefined)
		const reader = new FrameReader({ maxFrameBytes: 64 * MiB, limitVariable: 'peer' })
		socket.once('data', async (chunk) => {
			const [item] = reader.push(chunk)
			const { op } = parseFramePayload(item.payload)
			if (op === 'healthz' && spec.op !== 'healthz') {
				return socket.end(encodeFrame({ ok: true, protocolVersion: 2, features: [] }))
			}
			const parts = spec[variant]()
			const length = parts.reduce((sum, part) => sum + part.length, 0)
			socket.write(`${length.toString(16).padStart(8, '0')}\n`)
			for (const part of parts) {
				for (let at = 0; at < part.length && !socket.destroyed; at += MiB) {
					if (!socket.write(part.subarray(at, at + MiB))) {
						await new Promise((resolve) => {
							const done = () => {
								socket.off('drain', done)
								socket.off('close', done)
								resolve()
							}
							socket.on('drain', done)
							socket.on('close', done)
						})
					}
				}
			}
			if (!socket.destroyed) socket.end(spec.op === 'execute' ? '00000000\n' : undefined)
		})
	})
	server.listen(socketPath, () => process.stdout.write('listening\n'))
}

/** The host: one answer read, then its peak RSS growth and its longest event-loop block. */
async function host(socketPath, caseName) {
	const { AgentTransport } = await import(new URL('host/transport/agent-transport.js', dist))
	const { readFileThroughAgent } = await import(new URL('host/files/agent-file-read.js', dist))
	const { monitorEventLoopDelay } = await import('node:perf_hooks')
	const transport = new AgentTransport({ kind: 'unix', path: socketPath })
	const op = CASES[caseName].op
	// The machine's own noise: the longest block of this process doing nothing for 300 ms.
	const idle = monitorEventLoopDelay({ resolution: 5 })
	idle.enable()
	await new Promise((resolve) => setTimeout(resolve, 300))
	idle.disable()
	const baseRss = process.memoryUsage().rss
	const delay = monitorEventLoopDelay({ resolution: 5 })
	delay.enable()
	let outcome = 'answered'
	try {
		if (op === 'healthz') await transport.request('healthz', undefined)
		else if (op === 'read-file') await readFileThroughAgent(transport, '/w/f')
		else for await (const _ of transport.stream('execute', { command: 'x' })) break
	} catch (error) {
		outcome = error.bound ? `${error.name} (${error.bound})` : error.name
	}
	delay.disable()
	const peakRss = process.resourceUsage().maxRSS * 1024
	process.stdout.write(
		`${JSON.stringify({ rssGrowth: peakRss - baseRss, blockMs: delay.max / 1e6, idleBlockMs: idle.max / 1e6, outcome })}\n`,
	)
}

function child(args) {
	return spawn(process.execPath, ['--max-old-space-size=8192', self, ...args], {
		stdio: ['ignore', 'pipe', 'inherit'],
	})
}

function firstLine(process) {
	return new Promise((resolve, reject) => {
		let seen = ''
		process.stdout.on('data', (chunk) => {
			seen += chunk
			const end = seen.indexOf('\n')
			if (end !== -1) resolve(seen.slice(0, end))
		})
		process.once('exit', (code) => reject(new Error(`exited ${code}: ${seen}`)))
	})
}

async function measure(caseName, variant) {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-hostile-reply-'))
	const socketPath = join(dir, 'peer.sock')
	const peerProcess = child(['--peer', socketPath, caseName, variant])
	try {
		await firstLine(peerProcess)
		return JSON.parse(await firstLine(child(['--host', socketPath, caseName])))
	} finally {
		peerProcess.kill()
		await rm(dir, { recursive: true, force: true })
	}
}

function median(values) {
	const sorted = [...values].sort((a, b) => a - b)
	return sorted[Math.floor(sorted.length / 2)]
}

async function main() {
	const count = argInt('count', 3)
	const rows = []
	for (const caseName of Object.keys(CASES)) {
		const runs = { honest: [], hostile: [] }
		for (let round = 0; round < count; round++) {
			for (const variant of ['honest', 'hostile'])
				runs[variant].push(await measure(caseName, variant))
		}
		const figure = (variant, key) => median(runs[variant].map((run) => run[key]))
		for (const variant of ['honest', 'hostile']) {
			rows.push([
				caseName,
				variant,
				runs[variant][0].outcome,
				mib(figure(variant, 'rssGrowth')),
				ms(figure(variant, 'blockMs')),
				ms(figure(variant, 'idleBlockMs')),
				variant === 'honest'
					? 'baseline'
					: ratio(figure('hostile', 'rssGrowth'), figure('honest', 'rssGrowth')),
			])
		}
	}
	const header = [
		'case',
		'reply',
		'host sees',
		'peak RSS growth',
		'longest loop block',
		'idle loop block (noise floor)',
		'RSS vs honest',
	]
	printTable(
		`hostile replies (p50 of ${count} fresh host processes each)`,
		[header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`),
	)
}

const [mode, ...rest] = process.argv.slice(2)
if (mode === '--peer') await peer(rest[0], rest[1], rest[2])
else if (mode === '--host') await host(rest[0], rest[1])
else await main()
