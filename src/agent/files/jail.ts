/**
 * The path jail every file op (and the exec/terminal `cwd`) goes through.
 *
 * A path over the wire's limits (`wire/path-limits.ts`: 4096 bytes, a 255-byte component, a NUL) is
 * refused at once, before any filesystem call. A relative path resolves under the workspace. An
 * absolute path must sit lexically under the workspace or one of the extra roots
 * (`NAMZU_SANDBOX_READ_ROOTS` for reads, `NAMZU_SANDBOX_WRITE_ROOTS` for writes). Then the real
 * path — of the target, or of its nearest existing ancestor when the target does not exist yet —
 * must stay inside the real path of the root that matched, so a symlink cannot lead out. Every step
 * is linear in the path's length (physical-walk.ts).
 *
 * This is a check before an open: the workload can swap a component for a symlink in between. The
 * ops close that where Node allows (jailed-open.ts: the opened descriptor is verified again).
 *
 * Every escape is refused with the one stable error `path_escapes_workspace` and the message
 * `path escapes the workspace: <path as given>`; an absent or empty path is `missing_path`.
 */

import { lstatSync } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { describePathLimitViolation, pathLimitViolation } from '../../wire/path-limits.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { AgentConfig } from '../handler/config.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { realpathOfNearest } from './physical-walk.js'

export const PATH_ESCAPES_WORKSPACE = AGENT_REFUSAL.path_escapes_workspace
/** No path at all (absent, empty or not a string): nothing to jail. */
export const MISSING_PATH = AGENT_REFUSAL.missing_path
/** Longer than `MAX_PATH_BYTES` (UTF-8). */
export const PATH_TOO_LONG = AGENT_REFUSAL.path_too_long
/** A component longer than `MAX_PATH_COMPONENT_BYTES` (UTF-8). */
export const PATH_COMPONENT_TOO_LONG = AGENT_REFUSAL.path_component_too_long
/** A NUL byte anywhere in the path. */
export const PATH_CONTAINS_NUL = AGENT_REFUSAL.path_contains_nul

export type JailAccess = 'read' | 'write'

export type JailConfig = Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>

export interface JailedPath {
	/** Absolute, normalised (lexical) path the op should act on. */
	readonly path: string
	/** The root it was admitted under (normalised). */
	readonly root: string
	/** The real path of that root: what an opened descriptor must still be inside. */
	readonly realRoot: string
	/** Whether the path's last component was a symlink when checked (an open may follow it). */
	readonly finalIsLink: boolean
}

export function pathEscapesWorkspace(path: string): OpRefusal {
	return new OpRefusal(PATH_ESCAPES_WORKSPACE, `path escapes the workspace: ${path}`)
}

/** Whether `candidate` is `root` or lies beneath it (both absolute and normalised). */
export function isWithin(root: string, candidate: string): boolean {
	if (candidate === root) return true
	const rel = relative(root, candidate)
	return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel)
}

/** The roots admitting `access`, workspace first, normalised. */
export function jailRoots(config: JailConfig, access: JailAccess): string[] {
	const extra = access === 'read' ? config.readRoots : config.writeRoots
	return [config.workspace, ...extra].map((root) => resolve(root))
}

/**
 * The lexical half of the jail (pure): the normalised absolute path and every root that admits it
 * lexically (workspace first), empty when it escapes them all.
 */
export function lexicalJail(
	config: JailConfig,
	path: string,
	access: JailAccess,
): { readonly path: string; readonly roots: readonly string[] } {
	if (path === '' || path.includes('\0')) return { path, roots: [] }
	const absolute = resolve(resolve(config.workspace), path)
	return {
		path: absolute,
		roots: jailRoots(config, access).filter((root) => isWithin(root, absolute)),
	}
}

const LIMIT_CODES = {
	'contains-nul': PATH_CONTAINS_NUL,
	'too-long': PATH_TOO_LONG,
	'component-too-long': PATH_COMPONENT_TOO_LONG,
} as const

/** Refuses a path over the wire's limits (pure, one scan); the message never repeats the path. */
export function checkPathLimits(path: string): void {
	const violation = pathLimitViolation(path)
	if (violation === undefined) return
	const { expected, received } = describePathLimitViolation(violation)
	throw new OpRefusal(LIMIT_CODES[violation.kind], `path must be ${expected}, got ${received}`)
}

function isSymlink(path: string): boolean {
	try {
		return lstatSync(path).isSymbolicLink()
	} catch {
		return false
	}
}

export function resolveJailedPath(
	config: JailConfig,
	path: unknown,
	access: JailAccess,
): JailedPath {
	if (typeof path !== 'string' || path === '') throw new OpRefusal(MISSING_PATH)
	checkPathLimits(path)
	const lexical = lexicalJail(config, path, access)
	// The resolved form is what the kernel sees; a relative path grows by the workspace's length.
	checkPathLimits(lexical.path)
	if (lexical.roots.length === 0) throw pathEscapesWorkspace(path)
	let realTarget: string
	try {
		realTarget = realpathOfNearest(lexical.path)
	} catch {
		// A symlink loop or an unreadable ancestor: nothing proves the path stays inside.
		throw pathEscapesWorkspace(path)
	}
	for (const root of lexical.roots) {
		let realRoot: string
		try {
			realRoot = realpathOfNearest(root)
		} catch {
			continue
		}
		if (isWithin(realRoot, realTarget)) {
			return { path: lexical.path, root, realRoot, finalIsLink: isSymlink(lexical.path) }
		}
	}
	throw pathEscapesWorkspace(path)
}

export function resolveReadablePath(config: JailConfig, path: unknown): string {
	return resolveJailedPath(config, path, 'read').path
}

export function resolveWritablePath(config: JailConfig, path: unknown): string {
	return resolveJailedPath(config, path, 'write').path
}

/**
 * A working directory for a spawned process: the workspace when `cwd` is absent, else `cwd` under
 * the read rules (a cwd grants no write by itself; the sandbox's mounts decide what is writable).
 */
export function resolveWorkspaceDirectory(config: JailConfig, cwd: unknown): string {
	if (cwd === undefined || cwd === null || cwd === '') return resolve(config.workspace)
	return resolveReadablePath(config, cwd)
}
