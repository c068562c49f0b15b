import { connect } from 'node:net'
import { binaryEventBytes, releaseBinaryEventBytes } from '../../wire/binary-frame.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { OpHandler } from '../handler/op-context.js'
import { sendStreamReady } from '../handler/stream-heartbeat.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'
import { resolveLoopbackTarget, TCP_MAX_DATA_FRAME_BYTES } from './loopback-target.js'

/**
 * `tcp-connect`: a byte pipe between the host and a loopback port inside the sandbox. Each side is
 * paused while the other cannot take more, so neither buffers without bound. The stream ends (with
 * the terminator) once the upstream socket has closed.
 */
export const tcpConnect: OpHandler = (body, ctx) => {
	const target = resolveLoopbackTarget(body)
	// Half-open: upstream EOF is reported as `end` while the host may still send.
	const upstream = connect({ host: target.host, port: target.port, allowHalfOpen: true })
	let finished = false
	const finish = (error?: string) => {
		if (finished) return
		finished = true
		if (!ctx.closed) {
			if (error !== undefined) ctx.send({ type: 'error', error })
			ctx.endStream()
		}
		upstream.destroy()
	}

	upstream.on('connect', () => {
		if (!ctx.closed) sendStreamReady(ctx, body, { guestBootId: guestBootId() })
	})
	upstream.on('data', (chunk: Buffer) => {
		if (ctx.closed) return
		const flowing = ctx.binaryFrames
			? ctx.sendBinary('data', chunk)
			: ctx.send({ type: 'data', data: chunk.toString('base64') })
		if (!flowing) {
			upstream.pause()
			ctx.socket.once('drain', () => upstream.resume())
		}
	})
	upstream.on('end', () => {
		if (!ctx.closed) ctx.send({ type: 'end' })
	})
	upstream.on('error', (error: Error) => finish(error.message))
	upstream.on('close', () => finish())
	upstream.on('drain', () => ctx.socket.resume())

	ctx.onFrame((message) => {
		if (finished) return
		switch (message.type) {
			case 'data': {
				const raw = binaryEventBytes(message)
				if (raw === undefined && typeof message.data !== 'string') {
					return finish(AGENT_REFUSAL.tcp_invalid_data)
				}
				const bytes = raw ?? Buffer.from(String(message.data), 'base64')
				if (bytes.length > TCP_MAX_DATA_FRAME_BYTES) {
					return finish(
						formatRefusal(
							AGENT_REFUSAL.tcp_data_frame_too_large,
							`limit ${TCP_MAX_DATA_FRAME_BYTES} bytes`,
						),
					)
				}
				// Once written out, the frame's buffer may carry a later frame (frame-reader.ts).
				const flowing = upstream.write(bytes, () => releaseBinaryEventBytes(message))
				if (!flowing) ctx.socket.pause()
				return
			}
			case 'end':
				upstream.end()
				return
			case 'destroy':
				finish()
				return
		}
	})
	ctx.onClose(() => {
		finished = true
		upstream.destroy()
	})
}
