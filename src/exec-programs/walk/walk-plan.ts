/**
 * Everything a walk decides before touching a filesystem: the normalised root, the compiled
 * pattern and the bounds. The plan is JSON-serialisable; it is exactly what the guest walk program
 * receives as its argument.
 */
import { posix } from 'node:path'
import type { SandboxWalkFilesOptions } from '../../contract/sandbox.js'
import { compileGlob, DEFAULT_WALK_PATTERN } from './glob-pattern.js'
import type { GlobSegment } from './glob-segment.js'
import { FileWalkOptionError, FileWalkPatternError, FileWalkRootError } from './walk-errors.js'

/** Entries a walk may examine when `maxVisitedEntries` is not given. */
export const DEFAULT_MAX_VISITED_ENTRIES = 20_000
/** A plan travels as one argv string; Linux refuses a single argument above 128 KiB. */
export const MAX_PLAN_CHARS = 120_000

export interface FileWalkPlan {
	/** Absolute, normalised, no trailing slash (except `/` itself). */
	readonly root: string
	readonly patterns: readonly (readonly GlobSegment[])[]
	readonly prefixLength: number
	/** min(pattern depth, maxDepth); null = unbounded. Direct children of the root are depth 1. */
	readonly maxDepth: number | null
	readonly maxEntries: number
	readonly maxVisitedEntries: number
	/** `includeHidden`. */
	readonly dot: boolean
}

function positiveSafeInteger(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value > 0
}

/** Absolute and normalised; trailing slashes removed. Throws `FileWalkRootError`. */
export function normaliseWalkRoot(rootPath: unknown): string {
	if (typeof rootPath !== 'string' || !rootPath.startsWith('/') || rootPath.includes('\0')) {
		throw new FileWalkRootError(String(rootPath), 'root-not-absolute')
	}
	const normalised = posix.normalize(rootPath)
	return normalised.length > 1 && normalised.endsWith('/') ? normalised.slice(0, -1) : normalised
}

/** Validates and plans one walk. Throws a named `FileWalk*Error` for every refusal. */
export function planFileWalk(rootPath: string, options: SandboxWalkFilesOptions): FileWalkPlan {
	const root = normaliseWalkRoot(rootPath)
	if (typeof options !== 'object' || options === null) {
		throw new FileWalkOptionError('maxEntries', 'is required (a positive safe integer)')
	}
	if (!positiveSafeInteger(options.maxEntries)) {
		throw new FileWalkOptionError('maxEntries', 'is required and must be a positive safe integer')
	}
	if (options.maxDepth !== undefined && !positiveSafeInteger(options.maxDepth)) {
		throw new FileWalkOptionError('maxDepth', 'must be a positive safe integer')
	}
	if (options.maxVisitedEntries !== undefined && !positiveSafeInteger(options.maxVisitedEntries)) {
		throw new FileWalkOptionError('maxVisitedEntries', 'must be a positive safe integer')
	}
	if (options.includeHidden !== undefined && typeof options.includeHidden !== 'boolean') {
		throw new FileWalkOptionError('includeHidden', 'must be a boolean')
	}
	const pattern = options.pattern ?? DEFAULT_WALK_PATTERN
	if (typeof pattern !== 'string') throw new FileWalkOptionError('pattern', 'must be a string')
	const dot = options.includeHidden ?? false
	const glob = compileGlob(pattern, dot)
	const depths = [glob.depth, options.maxDepth ?? null].filter((d): d is number => d !== null)
	const plan: FileWalkPlan = {
		root,
		patterns: glob.patterns,
		prefixLength: glob.prefixLength,
		maxDepth: depths.length === 0 ? null : Math.min(...depths),
		maxEntries: options.maxEntries,
		maxVisitedEntries: options.maxVisitedEntries ?? DEFAULT_MAX_VISITED_ENTRIES,
		dot,
	}
	if (JSON.stringify(plan).length > MAX_PLAN_CHARS) {
		throw new FileWalkPatternError('plan-too-large', pattern.length)
	}
	return plan
}
