// Session replay: a detached program has written 1 MiB (the default retained log) and keeps
// ticking; an `attach-session` from offset 0 is timed to its first output byte and to "live" (the
// first byte past the `nextOffset` the `ready` event reported). Baseline in the same run: a
// `read-file-stream` of a 1 MiB file on the same agent — first byte and last byte.
// Talks the wire directly to a plain agent on a unix socket; every loop is bounded.
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import { argInt, ms, printTable, ratio, startBenchAgent, summarize } from './lib.mjs'

const MiB = 1024 * 1024
const rounds = argInt('count', 10)

function frame(object) {
	const payload = Buffer.from(JSON.stringify(object))
	return Buffer.concat([Buffer.from(`${payload.length.toString(16).padStart(8, '0')}\n`), payload])
}

/** Opens one request; calls `onEvent(event, elapsedMs)` per frame until it returns true or ends. */
function stream(socketPath, envelope, onEvent, timeoutMs = 10_000) {
	return new Promise((resolve, reject) => {
		const start = performance.now()
		const socket = connect(socketPath)
		let buffered = Buffer.alloc(0)
		const timer = setTimeout(() => {
			socket.destroy()
			reject(new Error(`${envelope.op} timed out`))
		}, timeoutMs)
		const done = () => {
			clearTimeout(timer)
			socket.destroy()
			resolve()
		}
		socket.on('connect', () => socket.write(frame(envelope)))
		socket.on('data', (chunk) => {
			buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
			while (buffered.length >= 9) {
				const length = Number.parseInt(buffered.subarray(0, 8).toString(), 16)
				if (buffered.length < 9 + length) break
				const payload = buffered.subarray(9, 9 + length)
				buffered = buffered.subarray(9 + length)
				if (length === 0) return done()
				if (onEvent(JSON.parse(payload.toString()), performance.now() - start)) return done()
			}
		})
		socket.on('error', (error) => {
			clearTimeout(timer)
			reject(error)
		})
		socket.on('close', done)
	})
}

async function request(socketPath, envelope) {
	let reply
	await stream(socketPath, envelope, (event) => {
		reply = event
		return true
	})
	return reply
}

const agent = await startBenchAgent()
try {
	const program = `
const chunk = Buffer.alloc(64 * 1024, 'x')
for (let i = 0; i < 16; i++) process.stdout.write(chunk)
let ticks = 0
const timer = setInterval(() => { process.stdout.write('tick\\n'); if (++ticks > 3000) clearInterval(timer) }, 10)
`
	const started = await request(agent.socketPath, {
		op: 'start-detached',
		body: { sessionId: 'replay', command: process.execPath, args: ['-e', program] },
	})
	if (!started?.ok) throw new Error(`start-detached refused: ${JSON.stringify(started)}`)
	for (let i = 0; i < 500; i++) {
		const listed = await request(agent.socketPath, { op: 'list-sessions' })
		const session = listed?.sessions?.find((s) => s.sessionId === 'replay')
		if (session && session.nextOffset >= MiB) break
		await new Promise((resolve) => setTimeout(resolve, 10))
	}

	const firstByte = []
	const toLive = []
	let replayed = 0
	for (let i = 0; i < rounds; i++) {
		let liveFrom = Number.POSITIVE_INFINITY
		let first
		let bytes = 0
		await stream(
			agent.socketPath,
			{ op: 'attach-session', body: { sessionId: 'replay', fromOffset: 0 } },
			(event, t) => {
				if (event.type === 'ready') liveFrom = event.nextOffset
				if (event.type !== 'data') return event.type === 'error'
				first ??= t
				bytes += Buffer.byteLength(event.data)
				if (event.offset >= liveFrom) {
					toLive.push(t)
					return true
				}
				return false
			},
		)
		if (first !== undefined) firstByte.push(first)
		replayed = bytes
	}

	await writeFile(join(agent.workspace, 'one-mib.bin'), Buffer.alloc(MiB, 'y'))
	const fileFirst = []
	const fileLast = []
	for (let i = 0; i < rounds; i++) {
		let first
		await stream(
			agent.socketPath,
			{ op: 'read-file-stream', body: { path: join(agent.workspace, 'one-mib.bin') } },
			(event, t) => {
				if (event.type === 'data') first ??= t
				if (event.type === 'end') {
					fileLast.push(t)
					return true
				}
				return event.type === 'error'
			},
		)
		if (first !== undefined) fileFirst.push(first)
	}
	await request(agent.socketPath, {
		op: 'kill-session',
		body: { sessionId: 'replay', signal: 'SIGKILL' },
	})

	const [fb, live, ff, fl] = [firstByte, toLive, fileFirst, fileLast].map(summarize)
	printTable(
		`session replay of ${(replayed / MiB).toFixed(2)} MiB retained output (n = ${rounds})`,
		[
			`attach → first byte  p50 ${ms(fb.p50)}  p95 ${ms(fb.p95)}   read-file-stream first byte p50 ${ms(ff.p50)}   ratio ${ratio(fb.p50, ff.p50)}`,
			`attach → live        p50 ${ms(live.p50)}  p95 ${ms(live.p95)}   read-file-stream 1 MiB to end p50 ${ms(fl.p50)}   ratio ${ratio(live.p50, fl.p50)}`,
		],
	)
} finally {
	await agent.stop()
}
