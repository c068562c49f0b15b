/**
 * `listFiles` through an `AgentTransport`: streamed (`list-files-stream`, a batch per frame) from
 * a guest that advertises it, else the one-reply `list-files` under its listing ceiling. Either way
 * the host holds at most `MAX_LISTING_BYTES` of one listing, counted as it arrives, and a guest
 * that sends more is refused by name (`AgentListingTooLargeError`), never cut short to look
 * complete. A stream that ends without its `end`, or whose count disagrees, is a protocol error.
 */

import type { SandboxFileEntry } from '../../contract/sandbox.js'
import { LIST_FILES_STREAM_FEATURE } from '../../wire/features.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { readRefusal } from '../transport/exchange.js'
import { guestHasFeature } from '../transport/guest-features.js'
import { AgentListingTooLargeError } from '../transport/transport-errors.js'
import { asFileError, fileRefusalError } from './file-refusal.js'

/** What one listing may cost the host: 128 MiB (a million entries of ~64-character paths). */
export const MAX_LISTING_BYTES = 128 * 1024 * 1024
/** What an entry costs beside its path (the object and its size), for the bound above. */
const ENTRY_OVERHEAD_BYTES = 64

/** Collects entries up to `MAX_LISTING_BYTES`, each checked strictly. */
class ListingCollector {
	readonly entries: SandboxFileEntry[] = []
	#bytes = 0
	readonly #op: string
	readonly #path: string

	constructor(op: string, path: string) {
		this.#op = op
		this.#path = path
	}

	add(rows: unknown): void {
		if (!Array.isArray(rows)) throw new RemoteProtocolError(`${this.#op}: reply has no entries`)
		for (const row of rows) {
			const record = row as { path?: unknown; size?: unknown } | null
			if (typeof record?.path !== 'string' || typeof record.size !== 'number') {
				throw new RemoteProtocolError(`${this.#op}: malformed entry`)
			}
			this.#bytes += record.path.length + ENTRY_OVERHEAD_BYTES
			if (this.#bytes > MAX_LISTING_BYTES) {
				throw new AgentListingTooLargeError(this.#path, MAX_LISTING_BYTES, this.entries.length)
			}
			this.entries.push({ path: record.path, size: record.size })
		}
	}
}

/** Recursive regular files under `path`. */
export async function listFilesThroughAgent(
	transport: AgentTransport,
	path: string,
	signal?: AbortSignal,
): Promise<SandboxFileEntry[]> {
	try {
		if (await guestHasFeature(transport, LIST_FILES_STREAM_FEATURE, signal)) {
			return await streamListing(transport, path, signal)
		}
		const reply = await transport.call(AGENT_OP.listFiles, { path }, signal ? { signal } : {})
		const collector = new ListingCollector(AGENT_OP.listFiles, path)
		collector.add(reply.entries)
		return collector.entries
	} catch (error) {
		throw asFileError('listFiles', path, error)
	}
}

async function streamListing(
	transport: AgentTransport,
	path: string,
	signal: AbortSignal | undefined,
): Promise<SandboxFileEntry[]> {
	const op = AGENT_OP.listFilesStream
	const collector = new ListingCollector(op, path)
	let count: number | undefined
	for await (const event of transport.stream(op, { path }, signal ? { signal } : {})) {
		if (count !== undefined) throw new RemoteProtocolError(`${op}: an event after end`)
		if (event.type === 'entries') collector.add(event.entries)
		else if (event.type === 'end' && typeof event.count === 'number') count = event.count
		else if (event.type === 'error') {
			throw fileRefusalError('listFiles', op, path, readRefusal(event))
		} else throw new RemoteProtocolError(`${op}: unexpected event ${String(event.type)}`)
	}
	if (count === undefined) throw new RemoteProtocolError(`${op}: terminator without an end event`)
	if (count !== collector.entries.length) {
		throw new RemoteProtocolError(
			`${op}: the guest counts ${count} entries, ${collector.entries.length} arrived`,
		)
	}
	return collector.entries
}
