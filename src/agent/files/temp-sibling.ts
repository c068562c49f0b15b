/**
 * Names of the agent's own temporary write files. The single-frame path names them
 * `.namzu-write-<basename>.<uuid>.part` (the target's basename plus 55 bytes); a part sequence's
 * temp file is named by the host in the same family, and `discard` may remove nothing else.
 */

import { randomUUID } from 'node:crypto'

export const TEMP_PREFIX = '.namzu-write-'
export const TEMP_SUFFIX = '.part'

export function tempSiblingName(targetBasename: string, id: string = randomUUID()): string {
	return `${TEMP_PREFIX}${targetBasename}.${id}${TEMP_SUFFIX}`
}

export function isTempFileName(basename: string): boolean {
	return (
		basename.startsWith(TEMP_PREFIX) &&
		basename.endsWith(TEMP_SUFFIX) &&
		basename.length > TEMP_PREFIX.length + TEMP_SUFFIX.length &&
		!basename.includes('/')
	)
}
