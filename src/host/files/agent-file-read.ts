/**
 * Reads through an `AgentTransport`. A range uses ranged `read-file` (base64; the guest refuses,
 * never shortens, a slice above its cap); a whole file streams (`read-file-stream`) and is gathered
 * into one Buffer when the guest advertises the feature, and otherwise takes the single-frame
 * `read-file`. A range or a stream against a guest without the feature is refused before the read
 * is dialed. Guest refusals become the contract's file errors.
 */
import type { SandboxFileEntry } from '../../contract/sandbox.js'
import { decodeBase64 } from '../../wire/base64-pieces.js'
import { READ_FILE_STREAM_FEATURE } from '../../wire/features.js'
import { dataEventTextBytes } from '../../wire/frame.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import {
	AgentReadFileStreamUnsupportedError,
	RemoteProtocolError,
} from '../transport/transport-errors.js'
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

function rangeOf(options: AgentReadFileOptions): ByteRange {
	return {
		...(options.offset === undefined ? {} : { offset: options.offset }),
		...(options.length === undefined ? {} : { length: options.length }),
	}
}

/** A slice (ranged `read-file`) or the whole file (streamed when the guest can). */
export async function readFileThroughAgent(
	transport: AgentTransport,
	path: string,
	options: AgentReadFileOptions = {},
): Promise<Buffer> {
	const { signal } = options
	const ranged = options.offset !== undefined || options.length !== undefined
	const streams = (await transport.features(signal)).has(READ_FILE_STREAM_FEATURE)
	if (ranged && !streams) throw new AgentReadFileStreamUnsupportedError('readFile')
	if (!ranged && streams) {
		const collector = new ByteCollector()
		// Chunks are decoded straight into the collector, so nothing is yielded here.
		for await (const _ of streamFile(transport, 'readFile', path, {}, signal, collector)) {
		}
		return collector.toBuffer()
	}
	let reply: Record<string, unknown>
	try {
		reply = await transport.call(
			'read-file',
			{ path, encoding: 'base64', ...rangeOf(options) },
			signal ? { signal } : {},
		)
	} catch (error) {
		throw asFileError('readFile', path, error)
	}
	if (typeof reply.content !== 'string') {
		throw new RemoteProtocolError('read-file: reply has no string content')
	}
	return Buffer.from(reply.content, reply.encoding === 'utf8' ? 'utf8' : 'base64')
}

/** The file as ordered chunks; breaking the loop or aborting closes the connection. */
export async function* readFileStreamThroughAgent(
	transport: AgentTransport,
	path: string,
	options: AgentReadFileOptions = {},
): AsyncGenerator<Buffer, void, undefined> {
	const features = await transport.features(options.signal)
	if (!features.has(READ_FILE_STREAM_FEATURE)) {
		throw new AgentReadFileStreamUnsupportedError('readFileStream')
	}
	yield* streamFile(transport, 'readFileStream', path, rangeOf(options), options.signal)
}

async function* streamFile(
	transport: AgentTransport,
	operation: string,
	path: string,
	range: ByteRange,
	signal: AbortSignal | undefined,
	collector?: ByteCollector,
): AsyncGenerator<Buffer, void, undefined> {
	let received = 0
	let ended = false
	try {
		const events = transport.stream(
			'read-file-stream',
			{ path, ...range },
			signal ? { signal } : {},
		)
		for await (const event of events) {
			if (event.type === 'meta') {
				if (typeof event.length === 'number') collector?.expect(event.length)
			} else if (
				event.type === 'data' &&
				(dataEventTextBytes(event) || typeof event.data === 'string')
			) {
				const ascii = dataEventTextBytes(event) ?? Buffer.from(String(event.data), 'latin1')
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
				throw fileRefusalError(operation, path, String(event.error))
			} else {
				throw new RemoteProtocolError(`read-file-stream: unexpected event ${String(event.type)}`)
			}
		}
	} catch (error) {
		throw asFileError(operation, path, error)
	}
	if (!ended) throw new RemoteProtocolError('read-file-stream: terminator without an end event')
}

/** Recursive regular files under `path` (op `list-files`). */
export async function listFilesThroughAgent(
	transport: AgentTransport,
	path: string,
	signal?: AbortSignal,
): Promise<SandboxFileEntry[]> {
	let reply: Record<string, unknown>
	try {
		reply = await transport.call('list-files', { path }, signal ? { signal } : {})
	} catch (error) {
		throw asFileError('listFiles', path, error)
	}
	const entries = reply.entries
	if (!Array.isArray(entries)) throw new RemoteProtocolError('list-files: reply has no entries')
	return entries.map((entry: unknown) => {
		const record = entry as { path?: unknown; size?: unknown } | null
		if (typeof record?.path !== 'string' || typeof record.size !== 'number') {
			throw new RemoteProtocolError('list-files: malformed entry')
		}
		return { path: record.path, size: record.size }
	})
}
