/**
 * Resolves an `execute` working directory with the jail's rule (upstream shapes §3.7): a relative
 * path is taken under `NAMZU_SANDBOX_WORKSPACE`, an absolute one must already name a place in it,
 * and the real path (symlinks followed) must stay inside the workspace and be a directory. Failures
 * are `OpRefusal('invalid_cwd: …')`.
 */
import { realpath, stat } from 'node:fs/promises'
import { isAbsolute, resolve, sep } from 'node:path'
import { OpRefusal } from './op-context.js'

function isInside(root: string, target: string): boolean {
	return target === root || target.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)
}

function refuse(detail: string): OpRefusal {
	return new OpRefusal(`invalid_cwd: ${detail}`)
}

export async function resolveWorkingDirectory(
	cwd: string | undefined,
	workspace: string,
): Promise<string> {
	if (cwd !== undefined && typeof cwd !== 'string') throw refuse('cwd must be a string')
	const requested = cwd === undefined || cwd === '' ? workspace : cwd
	const candidate = isAbsolute(requested) ? resolve(requested) : resolve(workspace, requested)
	if (!isInside(resolve(workspace), candidate)) {
		throw refuse(`path escapes the workspace: ${requested}`)
	}
	let realRoot: string
	let realTarget: string
	try {
		realRoot = await realpath(workspace)
	} catch {
		throw refuse(`workspace does not exist: ${workspace}`)
	}
	try {
		realTarget = await realpath(candidate)
	} catch {
		throw refuse(`no such directory: ${requested}`)
	}
	if (!isInside(realRoot, realTarget)) throw refuse(`path escapes the workspace: ${requested}`)
	if (!(await stat(realTarget)).isDirectory()) throw refuse(`not a directory: ${requested}`)
	return realTarget
}
