/**
 * Whether a command can be executed, decided the way `execvp` searches (pure, over an injected
 * probe): a name with a `/` is taken relative to the working directory, any other name is looked
 * up in each `PATH` entry in order (an empty entry is the working directory). A command started
 * behind the cgroup join prefix is exec'd by a shell, which would report a missing program as exit
 * status 127; looking it up first keeps it the spawn error (`ENOENT` / `EACCES`) it is without one.
 */
import { accessSync, constants, statSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'

/** Node's own fallback when the child's environment has no `PATH`. */
export const DEFAULT_SEARCH_PATH = '/usr/bin:/bin'

export type ProbeResult = 'executable' | 'not-executable' | 'missing'

export type LookupResult = { readonly found: string } | { readonly code: 'ENOENT' | 'EACCES' }

export function lookupExecutable(
	command: string,
	searchPath: string | undefined,
	cwd: string,
	probe: (path: string) => ProbeResult,
): LookupResult {
	if (command === '') return { code: 'ENOENT' }
	if (command.includes('/')) {
		const path = isAbsolute(command) ? command : resolve(cwd, command)
		const result = probe(path)
		if (result === 'executable') return { found: path }
		return { code: result === 'missing' ? 'ENOENT' : 'EACCES' }
	}
	let denied = false
	for (const entry of (searchPath ?? DEFAULT_SEARCH_PATH).split(':')) {
		const dir = entry === '' ? cwd : isAbsolute(entry) ? entry : resolve(cwd, entry)
		const path = join(dir, command)
		const result = probe(path)
		if (result === 'executable') return { found: path }
		if (result === 'not-executable') denied = true
	}
	return { code: denied ? 'EACCES' : 'ENOENT' }
}

/** The real probe: a regular file this process may execute. */
export function probeExecutable(path: string): ProbeResult {
	try {
		if (!statSync(path).isFile()) return 'not-executable'
	} catch {
		return 'missing'
	}
	try {
		accessSync(path, constants.X_OK)
		return 'executable'
	} catch {
		return 'not-executable'
	}
}

/** The error Node's `spawn` reports for the same failure, so callers see one shape either way. */
export class SpawnLookupError extends Error {
	override readonly name = 'SpawnLookupError'
	readonly code: 'ENOENT' | 'EACCES'

	constructor(command: string, code: 'ENOENT' | 'EACCES') {
		super(`spawn ${command} ${code}`)
		this.code = code
	}
}
