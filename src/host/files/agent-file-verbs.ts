/**
 * `stat`, `exists`, `remove`, `mkdir`, `rename` and `listDirectory` through an `AgentTransport`
 * (wire/file-verbs.ts). Each is refused by name before dialing a guest that does not advertise
 * `file-verbs` (`GuestFeatureUnsupportedError`); each reply is read strictly (a malformed one is a
 * `RemoteProtocolError`) under its op's bounds; refusals become the contract's file errors.
 */

import { isRecord } from '../../common/is-record.js'
import type { SandboxDirectoryPage, SandboxFileStat } from '../../contract/sandbox.js'
import { FILE_VERBS_FEATURE } from '../../wire/features.js'
import { MAX_LIST_DIRECTORY_PAGE } from '../../wire/file-verbs.js'
import { AGENT_OP, type AgentOp } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { requireGuestFeature } from '../transport/guest-features.js'
import { asFileError } from './file-refusal.js'
import { shownGuestPath } from './guest-path.js'

const FILE_TYPES: ReadonlySet<string> = new Set(['file', 'directory', 'symlink', 'other'])

function isCount(value: unknown): value is number {
	return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

/** The guest's stat, strictly: a protocol error names `op` when it is malformed. */
export function readFileStat(op: string, value: unknown): SandboxFileStat {
	if (
		!isRecord(value) ||
		typeof value.type !== 'string' ||
		!FILE_TYPES.has(value.type) ||
		!isCount(value.size) ||
		!isCount(value.mode) ||
		typeof value.mtimeMs !== 'number' ||
		(value.symlinkTarget !== undefined && typeof value.symlinkTarget !== 'string')
	) {
		throw new RemoteProtocolError(`${op}: malformed stat`)
	}
	return {
		type: value.type as SandboxFileStat['type'],
		size: value.size,
		mode: value.mode,
		mtimeMs: value.mtimeMs,
		...(typeof value.symlinkTarget === 'string' ? { symlinkTarget: value.symlinkTarget } : {}),
	}
}

/** One verb: the feature check, the call, its refusal as the contract's error. */
async function fileVerb(
	transport: AgentTransport,
	operation: string,
	op: AgentOp,
	path: string,
	body: object,
	signal: AbortSignal | undefined,
): Promise<Record<string, unknown>> {
	try {
		await requireGuestFeature(transport, FILE_VERBS_FEATURE, operation, signal)
		return await transport.call(op, body, signal ? { signal } : {})
	} catch (error) {
		throw asFileError(operation, path, error)
	}
}

export async function statThroughAgent(
	transport: AgentTransport,
	path: string,
	signal?: AbortSignal,
	operation = 'stat',
): Promise<SandboxFileStat> {
	const op = AGENT_OP.statPath
	const reply = await fileVerb(transport, operation, op, path, { path }, signal)
	return readFileStat(op, reply.stat)
}

export async function removeThroughAgent(
	transport: AgentTransport,
	path: string,
	recursive: boolean,
	signal?: AbortSignal,
): Promise<void> {
	await fileVerb(transport, 'remove', AGENT_OP.removePath, path, { path, recursive }, signal)
}

export async function mkdirThroughAgent(
	transport: AgentTransport,
	path: string,
	recursive: boolean,
	signal?: AbortSignal,
): Promise<void> {
	await fileVerb(transport, 'mkdir', AGENT_OP.makeDirectory, path, { path, recursive }, signal)
}

export async function renameThroughAgent(
	transport: AgentTransport,
	from: string,
	to: string,
	signal?: AbortSignal,
): Promise<void> {
	await fileVerb(transport, 'rename', AGENT_OP.renamePath, from, { from, to }, signal)
}

export interface ListDirectoryRequestOptions {
	readonly limit?: number
	readonly cursor?: string
	readonly signal?: AbortSignal
}

export async function listDirectoryThroughAgent(
	transport: AgentTransport,
	rootDir: string,
	path: string,
	options: ListDirectoryRequestOptions,
): Promise<SandboxDirectoryPage> {
	const op = AGENT_OP.listDirectory
	const body = {
		path,
		...(options.limit === undefined ? {} : { limit: options.limit }),
		...(options.cursor === undefined ? {} : { cursor: options.cursor }),
	}
	const reply = await fileVerb(transport, 'listDirectory', op, path, body, options.signal)
	const rows = reply.entries
	const asked = options.limit ?? MAX_LIST_DIRECTORY_PAGE
	if (!Array.isArray(rows) || rows.length > Math.min(asked, MAX_LIST_DIRECTORY_PAGE)) {
		throw new RemoteProtocolError(`${op}: reply has no entries, or more than were asked for`)
	}
	const directory = path.endsWith('/') && path.length > 1 ? path.slice(0, -1) : path
	const entries = rows.map((row: unknown) => {
		const name = isRecord(row) ? row.name : undefined
		if (
			typeof name !== 'string' ||
			name === '' ||
			name.includes('/') ||
			name === '.' ||
			name === '..'
		) {
			throw new RemoteProtocolError(`${op}: malformed entry name`)
		}
		const guestPath = directory === '/' ? `/${name}` : `${directory}/${name}`
		return { name, path: shownGuestPath(rootDir, guestPath), ...readFileStat(op, row) }
	})
	const next = reply.nextCursor
	if (next !== undefined && typeof next !== 'string') {
		throw new RemoteProtocolError(`${op}: malformed nextCursor`)
	}
	return { entries, ...(typeof next === 'string' ? { nextCursor: next } : {}) }
}
