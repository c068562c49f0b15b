/**
 * `writeFile` through an `AgentTransport`. Above `maxWriteFileBytes` the body is refused before
 * any route is chosen; a body whose single `write-file` frame fits the guest's limit is sent as
 * that one request; a larger one goes in parts — only to a guest advertising `write-file-parts` —
 * appended strictly in sequence, one connection each, to a temp sibling that the last part
 * renames onto the target. A failed or aborted sequence removes its temp file (best effort, on its
 * own 5 s clock) and rethrows the original error.
 */

import { randomUUID } from 'node:crypto'
import { BINARY_FRAMES_FEATURE, WRITE_FILE_PARTS_FEATURE } from '../../wire/features.js'
import type { WriteFilePart } from '../../wire/protocol.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { WRITE_PART_DISCARD_TIMEOUT_MS } from '../transport/agent-transport-options.js'
import { refusalError, refusalOf } from '../transport/exchange.js'
import { guestHasFeature } from '../transport/guest-features.js'
import {
	AgentFrameTooLargeError,
	AgentPreauthFrameTooLargeError,
	AgentWriteFileTooLargeError,
} from '../transport/transport-errors.js'
import { asFileError } from './file-refusal.js'
import {
	base64Length,
	partBytesFitting,
	partTempPath,
	planParts,
	type WriteFileBody,
	writeFileBody,
} from './write-file-plan.js'

const EMPTY = new Uint8Array(0)

function toBuffer(data: string | Uint8Array): Buffer {
	if (typeof data === 'string') return Buffer.from(data, 'utf8')
	return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
}

async function sendWrite(
	transport: AgentTransport,
	target: string,
	body: WriteFileBody,
	signal: AbortSignal | undefined,
): Promise<Record<string, unknown>> {
	try {
		return await transport.call(AGENT_OP.writeFile, body, signal ? { signal } : {})
	} catch (error) {
		throw asFileError('writeFile', target, error)
	}
}

/**
 * Writes `data` to `path` atomically: refused above `maxWriteFileBytes`, one request when it fits
 * a frame, otherwise sequential parts to a guest advertising `write-file-parts`.
 */
export async function writeFileThroughAgent(
	transport: AgentTransport,
	path: string,
	data: string | Uint8Array,
	signal?: AbortSignal,
): Promise<void> {
	const bytes = toBuffer(data)
	const limit = transport.options.maxWriteFileBytes
	if (bytes.length > limit) throw new AgentWriteFileTooLargeError(bytes.length, limit)
	signal?.throwIfAborted()
	const frameLimit = transport.frameLimitBytes
	const singleBytes =
		transport.encodedRequestBytes(AGENT_OP.writeFile, writeFileBody(path, EMPTY)) +
		base64Length(bytes.length)
	const fits = singleBytes <= frameLimit
	// A body that fits one frame goes binary only when the guest's features are already known (no
	// healthz is dialed for it); a larger one reads them anyway, to choose between stream and parts.
	const binary = fits
		? transport.binaryFramesAgreed
		: transport.options.binaryFrames &&
			(await guestHasFeature(transport, BINARY_FRAMES_FEATURE, signal))
	if (binary) {
		await uploadWrite(transport, path, bytes, signal)
		return
	}
	if (fits) {
		await sendWrite(transport, path, writeFileBody(path, bytes), signal)
		return
	}
	if (!(await guestHasFeature(transport, WRITE_FILE_PARTS_FEATURE, signal))) {
		if (transport.handle.kind === 'tcp') {
			throw new AgentPreauthFrameTooLargeError(singleBytes, frameLimit, {
				guestLacks: WRITE_FILE_PARTS_FEATURE,
			})
		}
		throw new AgentFrameTooLargeError(
			`writeFile frame of ${singleBytes} bytes exceeds the guest frame limit of ${frameLimit} bytes and the guest does not advertise '${WRITE_FILE_PARTS_FEATURE}'`,
			singleBytes,
			frameLimit,
		)
	}
	await writeParts(transport, path, bytes, signal)
}

/**
 * The whole body on one connection as binary frames, written by the guest as they arrive into a
 * temp sibling it commits durably at the end: nothing base64, no part sequence, and neither side
 * holds more than a frame or two of it.
 */
async function uploadWrite(
	transport: AgentTransport,
	path: string,
	bytes: Buffer,
	signal: AbortSignal | undefined,
): Promise<void> {
	let reply: Record<string, unknown>
	try {
		reply = await transport.upload(
			AGENT_OP.writeFile,
			{ path, sizeBytes: bytes.length },
			bytes,
			signal ? { signal } : {},
		)
	} catch (error) {
		throw asFileError('writeFile', path, error)
	}
	const refusal = refusalOf(reply)
	if (refusal !== undefined)
		throw asFileError('writeFile', path, refusalError(AGENT_OP.writeFile, refusal))
	if (reply.bytesWritten !== bytes.length) {
		throw new RemoteProtocolError(
			`write-file: guest wrote ${String(reply.bytesWritten)} of ${bytes.length} bytes`,
		)
	}
}

async function writeParts(
	transport: AgentTransport,
	target: string,
	bytes: Buffer,
	signal: AbortSignal | undefined,
): Promise<void> {
	const temp = partTempPath(target, randomUUID())
	// Sized for the worst part: the final one, which also carries renameTo and the largest offset.
	const worst = writeFileBody(temp, EMPTY, { offset: bytes.length, final: true, renameTo: target })
	const fitting = partBytesFitting(
		transport.frameLimitBytes,
		transport.encodedRequestBytes(AGENT_OP.writeFile, worst),
	)
	if (fitting <= 0) {
		throw new AgentFrameTooLargeError(
			`writeFile ${target}: the path leaves no room for content in one frame`,
			bytes.length,
			transport.frameLimitBytes,
		)
	}
	const partBytes = Math.min(transport.options.writeFilePartBytes ?? fitting, fitting)
	try {
		// Strictly sequential, one connection per part: the guest's pre-auth pool never holds more
		// than one of this caller's sockets, and each offset follows the bytes acknowledged.
		for (const slice of planParts(bytes.length, partBytes)) {
			signal?.throwIfAborted()
			const part: WriteFilePart = slice.final
				? { offset: slice.offset, final: true, renameTo: target }
				: { offset: slice.offset }
			const content = bytes.subarray(slice.offset, slice.offset + slice.length)
			const reply = await sendWrite(transport, target, writeFileBody(temp, content, part), signal)
			if (typeof reply.bytesWritten === 'number' && reply.bytesWritten !== slice.length) {
				throw new RemoteProtocolError(
					`write-file part at ${slice.offset}: guest wrote ${reply.bytesWritten} of ${slice.length} bytes`,
				)
			}
			if (slice.final && typeof reply.sizeBytes === 'number' && reply.sizeBytes !== bytes.length) {
				throw new RemoteProtocolError(
					`write-file final part: guest reports ${reply.sizeBytes} bytes, sent ${bytes.length}`,
				)
			}
		}
	} catch (error) {
		await discardPart(transport, temp)
		throw error
	}
}

/** Best-effort removal of an abandoned temp file, on its own bounded clock; never throws. */
async function discardPart(transport: AgentTransport, temp: string): Promise<void> {
	try {
		await transport.request(AGENT_OP.writeFile, writeFileBody(temp, EMPTY, { discard: true }), {
			signal: AbortSignal.timeout(WRITE_PART_DISCARD_TIMEOUT_MS),
		})
	} catch {
		// The original failure is what the caller needs; a leftover temp is named as ours.
	}
}
