/**
 * Resolves an `execute` working directory through the path jail (jail.ts), the same rule every
 * file op and the terminal's `cwd` follow, and requires a directory. Failures are
 * `OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_cwd, '…'))`, the refusal `execute` has always given.
 */

import { statSync } from 'node:fs'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { AgentConfig } from '../handler/config.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { resolveWorkspaceDirectory } from './jail.js'

function refuse(detail: string): OpRefusal {
	return new OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_cwd, detail))
}

export async function resolveWorkingDirectory(
	cwd: unknown,
	config: Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>,
): Promise<string> {
	if (cwd !== undefined && typeof cwd !== 'string') throw refuse('cwd must be a string')
	let path: string
	try {
		path = resolveWorkspaceDirectory(config, cwd)
	} catch (error) {
		throw refuse(error instanceof Error ? error.message : String(error))
	}
	// Without a cwd the run starts in the workspace root itself: name it, so an image that lacks it
	// (no volume mounted there, no directory in the image) says so instead of `undefined`.
	const named = cwd ?? `${path} (the workspace root, NAMZU_SANDBOX_WORKSPACE)`
	let isDirectory: boolean
	try {
		// Synchronous: a thread-pool round trip costs more than the stat, and the spawn's own chdir
		// into this directory blocks the loop just the same.
		isDirectory = statSync(path).isDirectory()
	} catch {
		throw refuse(`no such directory: ${named}`)
	}
	if (!isDirectory) throw refuse(`not a directory: ${named}`)
	return path
}
