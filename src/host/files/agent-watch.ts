/**
 * `watch` through an `AgentTransport`: one `watch-path` stream per iteration (refused by name
 * before dialing a guest without `watch`), each change read strictly and its paths shown as the
 * guest's own (`shownGuestPath`). `ready` and `idle` are the guest's and never reach the caller;
 * the host allows 3× `WATCH_IDLE_EVENT_MS` of silence before it calls the connection dead. An
 * abort of the signal, or leaving the loop, closes the connection and ends the iteration quietly.
 */

import { isRecord } from '../../common/is-record.js'
import type { SandboxWatchEvent } from '../../contract/sandbox.js'
import { WATCH_FEATURE } from '../../wire/features.js'
import { WATCH_IDLE_EVENT_MS } from '../../wire/file-verbs.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { requireGuestFeature } from '../transport/guest-features.js'
import { asFileError } from './file-refusal.js'
import { shownGuestPath } from './guest-path.js'

const CHANGE_TYPES: ReadonlySet<string> = new Set(['create', 'modify', 'delete', 'rename'])
const op = AGENT_OP.watchPath

export interface WatchRequestOptions {
	readonly recursive: boolean
	readonly cursor?: string
	readonly signal?: AbortSignal
}

function readEvent(rootDir: string, event: Record<string, unknown>): SandboxWatchEvent | undefined {
	if (event.type === 'ready' || event.type === 'idle') return undefined
	if (
		event.type === 'overflow' &&
		typeof event.at === 'number' &&
		typeof event.cursor === 'string'
	) {
		return { type: 'overflow', at: event.at, cursor: event.cursor }
	}
	const change = event.type === 'change' ? event.change : undefined
	if (
		!isRecord(change) ||
		typeof change.type !== 'string' ||
		!CHANGE_TYPES.has(change.type) ||
		typeof change.path !== 'string' ||
		(change.fromPath !== undefined && typeof change.fromPath !== 'string') ||
		typeof change.at !== 'number' ||
		typeof change.cursor !== 'string'
	) {
		throw new RemoteProtocolError(`${op}: malformed event ${String(event.type)}`)
	}
	return {
		type: change.type as 'create' | 'modify' | 'delete' | 'rename',
		path: shownGuestPath(rootDir, change.path),
		...(typeof change.fromPath === 'string'
			? { fromPath: shownGuestPath(rootDir, change.fromPath) }
			: {}),
		at: change.at,
		cursor: change.cursor,
	}
}

export async function* watchThroughAgent(
	transport: AgentTransport,
	rootDir: string,
	path: string,
	options: WatchRequestOptions,
): AsyncGenerator<SandboxWatchEvent, void, undefined> {
	const { signal } = options
	const body = {
		path,
		recursive: options.recursive,
		...(options.cursor === undefined ? {} : { cursor: options.cursor }),
	}
	try {
		await requireGuestFeature(transport, WATCH_FEATURE, 'watch', signal)
		const events = transport.stream(op, body, {
			idleTimeoutMs: 3 * WATCH_IDLE_EVENT_MS,
			...(signal ? { signal } : {}),
		})
		for await (const event of events) {
			const read = readEvent(rootDir, event)
			if (read !== undefined) yield read
		}
	} catch (error) {
		if (signal?.aborted) return
		throw asFileError('watch', path, error)
	}
}
