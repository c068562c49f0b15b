/**
 * `list-files-stream`: `list-files`'s listing (the same walk, the same jail) as `entries` events of
 * at most `LIST_FILES_BATCH_ENTRIES`, then `end` with the count — so what the host reads in one
 * frame never grows with the workspace. The writer waits for `drain` between batches.
 */
import { LIST_FILES_BATCH_ENTRIES } from '../../wire/protocol.js'
import { resolveJailedPath } from '../files/jail.js'
import type { OpHandler } from '../handler/op-context.js'
import { waitForDrain } from '../handler/wait-for-drain.js'
import { walkRegularFiles } from './list-files.js'

export const listFilesStream: OpHandler = async (body, ctx) => {
	const jailed = resolveJailedPath(ctx.config, body.path, 'read')
	const entries = await walkRegularFiles(jailed, String(body.path))
	for (let at = 0; at < entries.length; at += LIST_FILES_BATCH_ENTRIES) {
		if (ctx.closed) return
		const batch = entries.slice(at, at + LIST_FILES_BATCH_ENTRIES)
		if (!ctx.send({ type: 'entries', entries: batch }) && !(await waitForDrain(ctx))) return
	}
	ctx.send({ type: 'end', count: entries.length })
	ctx.endStream()
}
