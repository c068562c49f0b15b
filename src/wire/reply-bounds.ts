/**
 * What the host accepts of a guest's answer, per op: the largest frame (refused at its header) and
 * what `JSON.parse` may be given of one (refused by the bounded scan as the bytes arrive,
 * json-shape.ts). Each is sized to what the op can legitimately answer, so a hostile guest's reply
 * costs the host at most about its ceiling: a control reply 64 KiB, one stream event 8 MiB.
 * Answers that grow with the guest's state are streamed (`list-files-stream`) or bounded by the
 * guest (a session summary echoes at most `SESSION_SUMMARY_ECHO_BYTES` of its command line).
 * Ceilings a call knows better (a ranged read, a session read's `maxBytes`) replace the frame
 * ceiling for that call; the JSON bounds stay.
 */

import type { JsonShapeLimits } from './json-shape.js'
import type { AgentOp } from './protocol.js'

const KiB = 1024
const MiB = 1024 * KiB

/** Deepest nesting any answer has (a session row's `args` is 3); anything deeper is hostile. */
export const REPLY_JSON_MAX_DEPTH = 8
/** Most bytes of one frame handed to `JSON.parse` (a frame's bulk string is not parsed). */
export const MAX_PARSED_REPLY_BYTES = 8 * MiB
/** The ceiling of a control reply: a reservation, a cancel, a write's count, a summary. */
export const CONTROL_REPLY_FRAME_BYTES = 64 * KiB
/** The ceiling of one event of a data stream (exec output, file chunks, terminal and tcp bytes). */
export const STREAM_EVENT_FRAME_BYTES = 8 * MiB
/** The ceiling of an answer that lists what the guest holds (sessions, stopped processes). */
export const LISTING_REPLY_FRAME_BYTES = 4 * MiB
/**
 * The ceiling of a whole-file `read-file`, which only a guest without `read-file-stream` is asked:
 * the file is its bulk string, held to `maxReadFileBytes` once it arrives.
 */
export const WHOLE_FILE_REPLY_FRAME_BYTES = 512 * MiB

/** What the host reads of one op's answers. */
export interface ReplyBounds {
	/** Largest frame; a header announcing more is refused before a payload byte is read. */
	readonly frameBytes: number
	readonly json: JsonShapeLimits
}

function bounds(frameBytes: number, maxValues: number): ReplyBounds {
	return {
		frameBytes,
		json: {
			maxDepth: REPLY_JSON_MAX_DEPTH,
			maxValues,
			maxParsedBytes: Math.min(frameBytes, MAX_PARSED_REPLY_BYTES),
		},
	}
}

/** A control reply: a few dozen members (a summary's `args` up to the echo bound). */
const CONTROL = bounds(CONTROL_REPLY_FRAME_BYTES, 16 * KiB)
/** One stream event: a delta, a chunk, a result — a handful of members around one string. */
const STREAM_EVENT = bounds(STREAM_EVENT_FRAME_BYTES, 4 * KiB)
/** A listing: a row is at least a `{`, a `,` and a member. */
const LISTING = bounds(LISTING_REPLY_FRAME_BYTES, 256 * KiB)

/** Every op's bounds; an op not named here (one this host does not know) gets `CONTROL`. */
export const REPLY_BOUNDS: { readonly [Op in AgentOp]: ReplyBounds } = {
	healthz: CONTROL,
	'reserve-execution': CONTROL,
	'cancel-execution': CONTROL,
	'execution-input': CONTROL,
	'signal-execution': CONTROL,
	'write-file': CONTROL,
	'start-detached': CONTROL,
	'kill-session': CONTROL,
	flush: CONTROL,
	restored: CONTROL,
	'release-listener': CONTROL,
	quiesce: LISTING,
	'list-sessions': LISTING,
	/** The one-reply listing of a guest without `list-files-stream`. */
	'list-files': LISTING,
	'list-files-stream': STREAM_EVENT,
	/** The file verbs: one stat or a confirmation; a directory page is at most 5000 entries. */
	'stat-path': CONTROL,
	'remove-path': CONTROL,
	'make-directory': CONTROL,
	'rename-path': CONTROL,
	'list-directory': LISTING,
	/** One change of a watch: a type, two paths, a time and a cursor. */
	'watch-path': CONTROL,
	execute: STREAM_EVENT,
	'attach-execution': STREAM_EVENT,
	'read-file-stream': STREAM_EVENT,
	terminal: STREAM_EVENT,
	'tcp-connect': STREAM_EVENT,
	'attach-session': STREAM_EVENT,
	'read-file': bounds(WHOLE_FILE_REPLY_FRAME_BYTES, 4 * KiB),
}

/** The bounds the host reads `op`'s answers with. */
export function replyBoundsOf(op: string): ReplyBounds {
	const bounds: Readonly<Record<string, ReplyBounds>> = REPLY_BOUNDS
	return Object.hasOwn(bounds, op) ? (bounds[op] ?? CONTROL) : CONTROL
}
