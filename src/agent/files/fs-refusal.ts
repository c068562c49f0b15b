/**
 * Turns a failed filesystem call into the refusal a file op answers. Node's errno messages already
 * lead with the code (`ENOENT: no such file or directory, open '…'`), which is what a caller
 * matches on; the path in them is the jailed path, never a secret.
 */

import { OpRefusal } from '../handler/op-refusal.js'

export function errnoCode(error: unknown): string | undefined {
	const code = (error as NodeJS.ErrnoException | undefined)?.code
	return typeof code === 'string' ? code : undefined
}

export function fsRefusal(error: unknown, prefix?: string): OpRefusal {
	if (error instanceof OpRefusal) return error
	const message = error instanceof Error ? error.message : String(error)
	return new OpRefusal(prefix === undefined ? message : `${prefix}: ${message}`)
}
