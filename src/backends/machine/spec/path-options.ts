/**
 * `readOnlyPaths` (host paths bound read-only at the same path, e.g. a toolchain under `~/.nvm`)
 * and `hiddenPaths` (paths masked even though a bind would expose them). The lexical rules are
 * checked when the config is resolved; existence and the relation to the state directory and the
 * workspace once the real paths are known (`resolveReadOnlyPath`). Each refusal is a
 * `LocalPathOptionError` naming the option and index. Pure.
 */

import { type ArgumentSite, optionalStringArray } from '../../../contract/argument-validators.js'
import { LocalPathOptionError } from '../machine-errors.js'
import { isWithin } from '../path-containment.js'

export type PathOptionName =
	| 'readOnlyPaths'
	| 'hiddenPaths'
	| 'backend.readOnlyPaths'
	| 'backend.hiddenPaths'

/** Collapses repeated and trailing slashes; `.` components are dropped. */
function normalized(path: string): string {
	const parts = path.split('/').filter((part) => part !== '' && part !== '.')
	return `/${parts.join('/')}`
}

/**
 * The contract's array-of-strings check, refusing as `LocalPathOptionError`: the list itself
 * (`not-a-list`) or the entry at the index the parameter names (`not-a-string`).
 */
function listShapeSite(name: PathOptionName, list: unknown): ArgumentSite {
	return {
		refuse: (parameter, expected) => {
			if (parameter === name || !Array.isArray(list)) {
				return new LocalPathOptionError(parameter, 'not-a-list', list, `must be ${expected}`)
			}
			const entry: unknown = list[Number(parameter.slice(name.length + 1, -1))]
			return new LocalPathOptionError(parameter, 'not-a-string', entry, `must be ${expected}`)
		},
	}
}

/** Validates one list option lexically; returns normalized absolute paths (order kept, duplicates dropped). */
export function validatePathList(name: PathOptionName, value: unknown): string[] {
	const entries = optionalStringArray(listShapeSite(name, value), name, value) ?? []
	const out: string[] = []
	entries.forEach((entry, index) => {
		const parameter = `${name}[${index}]`
		if (entry.includes('\0')) {
			throw new LocalPathOptionError(parameter, 'nul', entry, 'must not contain NUL')
		}
		if (!entry.startsWith('/')) {
			throw new LocalPathOptionError(parameter, 'not-absolute', entry, 'must be an absolute path')
		}
		if (entry.split('/').includes('..')) {
			throw new LocalPathOptionError(parameter, 'dot-dot', entry, "must not contain '..'")
		}
		const path = normalized(entry)
		if (path === '/') {
			throw new LocalPathOptionError(parameter, 'root', entry, 'must not be /')
		}
		if (!out.includes(path)) out.push(path)
	})
	return out
}

/** Whether two paths overlap (one is the other or lies below it). */
export function overlaps(a: string, b: string): boolean {
	return isWithin(a, b) || isWithin(b, a)
}

/**
 * Refuses a `readOnlyPaths` entry whose real path would expose the state directory (it, an
 * ancestor of it, or anything inside it), or `/` itself after symlinks.
 */
export function checkReadOnlyPath(
	parameter: string,
	given: string,
	real: string,
	stateDir: string,
): void {
	if (real === '/') {
		throw new LocalPathOptionError(parameter, 'root', given, 'resolves to /')
	}
	if (overlaps(real, stateDir)) {
		throw new LocalPathOptionError(
			parameter,
			'state-dir',
			given,
			`overlaps the sandbox state directory ${stateDir}`,
		)
	}
}

/** Refuses a `hiddenPaths` entry that would hide the workspace itself. */
export function checkHiddenPath(parameter: string, path: string, workspace: string): void {
	if (isWithin(workspace, path)) {
		throw new LocalPathOptionError(
			parameter,
			'workspace',
			path,
			`would hide the workspace ${workspace}`,
		)
	}
}
