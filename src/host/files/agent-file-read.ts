/**
 * Reads through an `AgentTransport`. A range uses ranged `read-file` (base64; the guest refuses,
 * never shortens, a slice above its cap); a whole file streams (`read-file-stream`) and is gathered
 * into one Buffer when the guest advertises the feature, and otherwise takes the single-frame
 * `read-file`. A range or a stream against a guest without the feature is refused before the read
 * is dialed. Guest refusals become the contract's file errors.
 *
 * The host holds itself to what it asked for, never the guest's word: a ranged reply may not be
 * larger than the range's base64 (its frame is refused at the header otherwise) nor decode to more
 * than the requested length; a stream may not announce more than was requested, nor send more than
 * it announced; a whole file is gathered only up to `maxReadFileBytes`. A guest that breaks these
 * gets a `RemoteByteCountError` (or `AgentReadFileTooLargeError` for an honest but larger file).
 */

import { decodeBase64, decodedBase64Length } from '../../wire/base64-pieces.js'
import { binaryEventBytes, releaseBinaryEventBytes } from '../../wire/binary-frame.js'
import { READ_FILE_STREAM_FEATURE } from '../../wire/features.js'
import { dataEventTextBytes } from '../../wire/frame.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteByteCountError, RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentRequestOptions, AgentTransport } from '../transport/agent-transport.js'
import { readRefusal } from '../transport/exchange.js'
import { guestHasFeature, requireGuestFeature } from '../transport/guest-features.js'
import { AgentReadFileTooLargeError } from '../transport/transport-errors.js'
import { ByteCollector } from './byte-collector.js'
import { asFileError, fileRefusalError } from './file-refusal.js'

export interface AgentReadFileOptions {
	readonly offset?: number
	readonly length?: number
	readonly signal?: AbortSignal
}

interface ByteRange {
	readonly offset?: number
	readonly length?: number
}

const EMPTY = Buffer.alloc(0)

/** What a ranged reply holds besides its content (`ok`, sizes, offsets, the boot id), generously. */
const RANGED_REPLY_OVERHEAD_BYTES = 64 * 1024

function rangeOf(options: AgentReadFileOptions): ByteRange {
	return {
		...(options.offset === undefined ? {} : { offset: options.offset }),
		...(options.length === undefined ? {} : { length: options.length }),
	}
}

function base64Length(bytes: number): number {
	return Math.ceil(bytes / 3) * 4
}

function isByteCount(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** A slice (ranged `read-file`) or the whole file (streamed when the guest can). */
export async function readFileThroughAgent(
	transport: AgentTransport,
	path: string,
	options: AgentReadFileOptions = {},
): Promise<Buffer> {
	const { signal } = options
	const ranged = options.offset !== undefined || options.length !== undefined
	if (ranged) {
		await requireGuestFeature(transport, READ_FILE_STREAM_FEATURE, 'readFile', signal)
	} else if (await guestHasFeature(transport, READ_FILE_STREAM_FEATURE, signal)) {
		const collector = new ByteCollector()
		// Chunks are decoded straight into the collector, so nothing is yielded here.
		for await (const _ of streamFile(transport, 'readFile', path, {}, signal, collector)) {
		}
		return collector.toBuffer()
	}
	return readOneFrame(transport, path, options)
}

/** One `read-file` reply: a slice, or (against a guest without streams) the whole file. */
async function readOneFrame(
	transport: AgentTransport,
	path: string,
	options: AgentReadFileOptions,
): Promise<Buffer> {
	const { signal, length } = options
	let reply: Record<string, unknown>
	try {
		reply = await transport.call(
			AGENT_OP.readFile,
			{ path, encoding: 'base64', ...rangeOf(options) },
			{
				...(signal ? { signal } : {}),
				...(length === undefined
					? {}
					: { maxFrameBytes: base64Length(length) + RANGED_REPLY_OVERHEAD_BYTES }),
			},
		)
	} catch (error) {
		throw asFileError('readFile', path, error)
	}
	if (typeof reply.content !== 'string') {
		throw new RemoteProtocolError('read-file: reply has no string content')
	}
	const content = Buffer.from(reply.content, reply.encoding === 'utf8' ? 'utf8' : 'base64')
	checkReply(content.length, reply, options, transport.options.maxReadFileBytes)
	return content
}

/** A `read-file` reply's byte counts against the request and against themselves. */
function checkReply(
	received: number,
	reply: Record<string, unknown>,
	options: AgentReadFileOptions,
	maxReadFileBytes: number,
): void {
	const { offset, length } = options
	const ranged = offset !== undefined || length !== undefined
	if (length !== undefined && received > length) {
		throw new RemoteByteCountError(
			AGENT_OP.readFile,
			'more than the requested length',
			length,
			received,
		)
	}
	if (isByteCount(reply.bytesRead) && reply.bytesRead !== received) {
		throw new RemoteByteCountError(
			AGENT_OP.readFile,
			'bytesRead contradicts the content sent',
			reply.bytesRead,
			received,
		)
	}
	if (isByteCount(reply.sizeBytes)) {
		const available = Math.max(0, reply.sizeBytes - (offset ?? 0))
		if (received > available) {
			throw new RemoteByteCountError(
				AGENT_OP.readFile,
				'more than the file it announced',
				available,
				received,
			)
		}
	}
	if (!ranged && received > maxReadFileBytes) {
		throw new AgentReadFileTooLargeError(received, maxReadFileBytes)
	}
}

/** The file as ordered chunks; breaking the loop or aborting closes the connection. */
export async function* readFileStreamThroughAgent(
	transport: AgentTransport,
	path: string,
	options: AgentReadFileOptions = {},
): AsyncGenerator<Buffer, void, undefined> {
	await requireGuestFeature(transport, READ_FILE_STREAM_FEATURE, 'readFileStream', options.signal)
	yield* streamFile(transport, 'readFileStream', path, rangeOf(options), options.signal)
}

/** The `meta` event's announced length, held to the request (and, gathering, to the host's cap). */
function announcedLength(
	event: Record<string, unknown>,
	range: ByteRange,
	gatherLimit: number | undefined,
): number {
	const { length } = event
	if (!isByteCount(length)) {
		throw new RemoteProtocolError('read-file-stream: meta without a byte length')
	}
	if (range.length !== undefined && length > range.length) {
		throw new RemoteByteCountError(
			AGENT_OP.readFileStream,
			'an announced length above the requested length',
			range.length,
			length,
		)
	}
	if (gatherLimit !== undefined && length > gatherLimit) {
		throw new AgentReadFileTooLargeError(length, gatherLimit)
	}
	return length
}

/** Binary frames; a gathered read's chunks placed straight into the collector's buffer. */
function streamOptions(
	signal: AbortSignal | undefined,
	collector: ByteCollector | undefined,
): AgentRequestOptions {
	return {
		binaryFrames: true,
		...(signal ? { signal } : {}),
		...(collector ? { placeBinaryData: collector.place.bind(collector) } : {}),
	}
}

async function* streamFile(
	transport: AgentTransport,
	operation: string,
	path: string,
	range: ByteRange,
	signal: AbortSignal | undefined,
	collector?: ByteCollector,
): AsyncGenerator<Buffer, void, undefined> {
	let announced: number | undefined
	let received = 0
	let ended = false
	try {
		const events = transport.stream(
			AGENT_OP.readFileStream,
			{ path, ...range },
			streamOptions(signal, collector),
		)
		for await (const event of events) {
			if (event.type === 'meta') {
				if (announced !== undefined)
					throw new RemoteProtocolError('read-file-stream: a second meta')
				const gatherLimit = collector ? transport.options.maxReadFileBytes : undefined
				announced = announcedLength(event, range, gatherLimit)
				collector?.expect(announced)
			} else if (
				event.type === 'data' &&
				(binaryEventBytes(event) || dataEventTextBytes(event) || typeof event.data === 'string')
			) {
				if (announced === undefined)
					throw new RemoteProtocolError('read-file-stream: data before meta')
				// Raw bytes from a binary frame; base64 text (its bytes, when the fast parse kept them).
				const raw = binaryEventBytes(event)
				const ascii = raw
					? EMPTY
					: (dataEventTextBytes(event) ?? Buffer.from(String(event.data), 'latin1'))
				const size = raw ? raw.length : decodedBase64Length(ascii)
				if (received + size > announced) {
					throw new RemoteByteCountError(
						AGENT_OP.readFileStream,
						'data past the announced length',
						announced,
						received + size,
					)
				}
				if (raw) {
					received += size
					if (!collector) yield raw
					else {
						collector.push(raw)
						// Copied: the reader may fill this buffer with a later frame.
						releaseBinaryEventBytes(event)
					}
					continue
				}
				if (collector) {
					received += collector.pushBase64(ascii)
					continue
				}
				const chunk = decodeBase64(ascii)
				received += chunk.length
				yield chunk
			} else if (event.type === 'end') {
				if (typeof event.bytesSent === 'number' && event.bytesSent !== received) {
					throw new RemoteProtocolError(
						`read-file-stream: guest reports ${event.bytesSent} bytes sent, ${received} received`,
					)
				}
				ended = true
			} else if (event.type === 'error') {
				throw fileRefusalError(operation, AGENT_OP.readFileStream, path, readRefusal(event))
			} else {
				throw new RemoteProtocolError(`read-file-stream: unexpected event ${String(event.type)}`)
			}
		}
	} catch (error) {
		throw asFileError(operation, path, error)
	}
	if (!ended) throw new RemoteProtocolError('read-file-stream: terminator without an end event')
}
