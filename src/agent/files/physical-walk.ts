/**
 * The real path of a path, walked from a held directory descriptor: each step opens the next names
 * under `/proc/self/fd/<fd>/` (the kernel jumps straight to the open directory, so a step costs
 * the same however deep it is) and holds what it reached. Steps take up to `STEP_COMPONENTS` names
 * at once; a step that does not reach a directory is retaken one name at a time, following a
 * symlink by pushing its target's components and stopping at the first name that does not exist.
 * Linear in the path's length, where re-resolving every prefix (what `realpath` and a dirname loop
 * do) is quadratic: a 100 KB path once blocked the agent's event loop for a minute.
 *
 * Linux only (`O_PATH`, `/proc/self/fd`), like the rest of the agent.
 */
import { closeSync, constants, lstatSync, openSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'

/** `O_PATH` (Linux): a descriptor that names a place without opening it for I/O. */
export const O_PATH = 0o10000000
/** The kernel's own bound on symlinks followed while resolving one path. */
export const MAX_SYMLINK_FOLLOWS = 40

const PROC_SELF_FD = '/proc/self/fd'

/** `name` looked up in the directory `fd` holds, without re-walking that directory's path. */
export function entryOf(fd: number, name: string): string {
	return `${PROC_SELF_FD}/${fd}/${name}`
}

/** The path the kernel holds for descriptor `fd`: the real path, symlinks already resolved. */
export function descriptorPath(fd: number): string {
	return readlinkSync(`${PROC_SELF_FD}/${fd}`)
}

/** A directory held as `O_PATH`: the deepest one that exists, and the names below it that do not. */
export interface NearestDirectory {
	/** The caller closes it. */
	readonly fd: number
	/**
	 * The rest of the path below `fd`: names that do not exist yet (the first may exist as a
	 * non-directory, in which case nothing after it can).
	 */
	readonly missing: readonly string[]
}

export class SymlinkLoopError extends Error {
	override readonly name = 'SymlinkLoopError'
	readonly code = 'ELOOP'
}

function isMissing(error: unknown): boolean {
	const code = (error as NodeJS.ErrnoException | undefined)?.code
	return code === 'ENOENT' || code === 'ENOTDIR'
}

/** Components of `path` in reverse order (the next one to take is last). */
function reversedComponents(path: string): string[] {
	return path
		.split('/')
		.filter((name) => name !== '' && name !== '.')
		.reverse()
}

const DIRECTORY_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW
/** Names one step takes at once: one syscall instead of three per name where all exist. */
export const STEP_COMPONENTS = 64

/**
 * Opens the next up to `STEP_COMPONENTS` names below `fd` in one call (the kernel follows any
 * symlinks among them, as a walk name by name would); undefined when they do not all lead to a
 * directory, so the caller retakes them one at a time.
 */
function stepMany(fd: number, pending: string[]): number | undefined {
	if (pending.length < 2) return undefined
	const names = pending.slice(-STEP_COMPONENTS).reverse()
	try {
		const next = openSync(entryOf(fd, names.join('/')), O_PATH | constants.O_DIRECTORY)
		pending.length -= names.length
		return next
	} catch {
		return undefined
	}
}

/**
 * Walks absolute `path` physically (symlinks followed, `..` taken in the directory reached) to the
 * deepest existing directory. Throws for a symlink loop or an unreadable directory.
 */
export function walkToNearest(path: string): NearestDirectory {
	const pending = reversedComponents(path)
	let fd = openSync('/', O_PATH | constants.O_DIRECTORY)
	let follows = 0
	// Names left to take one at a time after a step of many failed (it is not retried inside them).
	let single = 0
	try {
		for (;;) {
			if (single === 0) {
				const reached = stepMany(fd, pending)
				if (reached !== undefined) {
					closeSync(fd)
					fd = reached
					continue
				}
				single = STEP_COMPONENTS
			}
			single--
			const name = pending.pop()
			if (name === undefined) break
			const entry = entryOf(fd, name)
			let isLink: boolean
			let isDirectory: boolean
			try {
				const stats = lstatSync(entry)
				isLink = stats.isSymbolicLink()
				isDirectory = stats.isDirectory()
			} catch (error) {
				if (!isMissing(error)) throw error
				return { fd, missing: [name, ...pending.reverse()] }
			}
			if (isLink) {
				if (++follows > MAX_SYMLINK_FOLLOWS)
					throw new SymlinkLoopError(`too many symlinks: ${path}`)
				const target = readlinkSync(entry)
				if (target.startsWith('/')) {
					const root = openSync('/', O_PATH | constants.O_DIRECTORY)
					closeSync(fd)
					fd = root
				}
				pending.push(...reversedComponents(target))
				continue
			}
			if (!isDirectory) return { fd, missing: [name, ...pending.reverse()] }
			const next = openSync(entry, DIRECTORY_FLAGS)
			closeSync(fd)
			fd = next
		}
		return { fd, missing: [] }
	} catch (error) {
		closeSync(fd)
		throw error
	}
}

/**
 * Real path of `path` when it exists, else the real path of its nearest existing ancestor joined
 * with the missing tail (what the path will be once created).
 */
export function realpathOfNearest(path: string): string {
	const nearest = walkToNearest(path)
	try {
		return join(descriptorPath(nearest.fd), nearest.missing.join('/'))
	} finally {
		closeSync(nearest.fd)
	}
}
