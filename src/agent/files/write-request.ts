/**
 * Parsing a `write-file` body into the one shape the op then performs (pure). A `part` that is
 * present but not an object is refused rather than served as the whole-file write it resembles.
 */

import { isRecord } from '../../common/is-record.js'
import { asciiMemberBytes } from '../../wire/ascii-string-members.js'
import { decodeBase64 } from '../../wire/base64-pieces.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn, NON_NEGATIVE_INTEGER } from '../handler/value-checks.js'

export type WriteRequest =
	| { readonly kind: 'whole'; readonly path: string; readonly content: Buffer }
	| {
			readonly kind: 'part'
			/** The temp file the part is appended to. */
			readonly path: string
			readonly content: Buffer
			readonly offset: number
			/** Present on the final part: where the finished temp file is renamed. */
			readonly renameTo?: string
	  }
	| { readonly kind: 'discard'; readonly path: string }

export function parseWriteRequest(body: Record<string, unknown>): WriteRequest {
	// `content` is not read unless needed: for a bulk body it is a lazily built string (see
	// ascii-string-members.ts), and decoding straight from its bytes avoids building it.
	const { path, encoding, part } = body
	if (part !== undefined && !isRecord(part))
		throw new OpRefusal(AGENT_REFUSAL.write_part_invalid_shape)
	if (part?.discard === true) {
		if (typeof path !== 'string' || path === '')
			throw new OpRefusal(AGENT_REFUSAL.missing_path_or_content)
		return { kind: 'discard', path }
	}
	const contentBytes = asciiMemberBytes(body, 'content')
	if (typeof path !== 'string' || path === '')
		throw new OpRefusal(AGENT_REFUSAL.missing_path_or_content)
	let bytes: Buffer
	if (contentBytes && encoding === 'base64') bytes = decodeBase64(contentBytes)
	else if (typeof body.content === 'string') {
		bytes = Buffer.from(body.content, encoding === 'base64' ? 'base64' : 'utf8')
	} else throw new OpRefusal(AGENT_REFUSAL.missing_path_or_content)
	if (part === undefined) return { kind: 'whole', path, content: bytes }
	const { offset, final, renameTo } = part
	if (!isIntegerIn(offset, NON_NEGATIVE_INTEGER)) {
		throw new OpRefusal(AGENT_REFUSAL.write_part_invalid_offset)
	}
	if (final !== true) return { kind: 'part', path, content: bytes, offset }
	if (typeof renameTo !== 'string' || renameTo === '') {
		throw new OpRefusal(AGENT_REFUSAL.write_part_missing_rename_target)
	}
	return { kind: 'part', path, content: bytes, offset, renameTo }
}
