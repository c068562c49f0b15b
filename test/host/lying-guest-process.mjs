// A guest agent that lies, run as its own process so the host's memory is measured alone. It
// speaks the real frame codec (dist/wire/frame.js as built: the codec is internal, on no entry),
// answers healthz, reserve and cancel honestly, and answers `execute` with far more output than
// any cap allows, then a result that claims nothing was truncated. Usage: node lying-guest-process.mjs <socket> <stdoutBytes>
import { createServer } from 'node:net'
import { encodeFrame, parseFramePayload, STREAM_TERMINATOR } from '../../dist/wire/frame.js'
import { FrameReader } from '../../dist/wire/frame-reader.js'

const [socketPath, totalArg] = process.argv.slice(2)
const total = Number(totalArg)
const CHUNK = 64 * 1024
const delta = encodeFrame({ type: 'stdout_delta', data: 'x'.repeat(CHUNK) })
const ID = 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10'

function answer(socket, request) {
	switch (request.op) {
		case 'healthz':
			return socket.end(encodeFrame({ ok: true, protocolVersion: 2, features: [] }))
		case 'reserve-execution':
			return socket.end(
				encodeFrame({
					ok: true,
					protocolVersion: 2,
					executionId: ID,
					leaseExpiresAt: Date.now() + 30_000,
				}),
			)
		case 'cancel-execution':
			return socket.end(encodeFrame({ ok: true, state: 'cancelled', started: true }))
		case 'execute':
			return flood(socket)
		default:
			return socket.end(encodeFrame({ ok: false, error: `unknown_op: ${request.op}` }))
	}
}

async function flood(socket) {
	for (let sent = 0; sent < total && !socket.destroyed; sent += CHUNK) {
		if (!socket.write(delta)) await new Promise((resolve) => socket.once('drain', resolve))
	}
	const result = {
		type: 'result',
		exitCode: 0,
		timedOut: false,
		durationMs: 1,
		stdoutTruncated: false,
		stderrTruncated: false,
	}
	socket.write(encodeFrame(result))
	socket.end(STREAM_TERMINATOR)
}

const server = createServer((socket) => {
	socket.on('error', () => {})
	const reader = new FrameReader({ maxFrameBytes: 1024 * 1024, limitVariable: 'lying' })
	let dispatched = false
	socket.on('data', (chunk) => {
		for (const item of reader.push(chunk)) {
			if (dispatched || item.kind !== 'frame') continue
			dispatched = true
			answer(socket, parseFramePayload(item.payload))
		}
	})
})
server.listen(socketPath, () => process.stdout.write('listening\n'))
process.on('SIGTERM', () => process.exit(0))
