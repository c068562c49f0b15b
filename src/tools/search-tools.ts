/**
 * `glob` and `grep` over the sandbox's `walkFiles` (the walk runs inside the guest and never
 * follows a link out). `grep` reads each walked file through the bounded reader and matches on the
 * host, off its event loop, within a time budget; files past `max_file_bytes` or not UTF-8 are
 * counted, not searched.
 */
import type { Sandbox, SandboxFileEntry } from '../index.js'
import { readBounded, utf8Text } from './bounded-read.js'
import { defineTool, throttledProgress } from './define-tool.js'
import { compileGrepQuery, type LineMatch, matchLines } from './grep-matcher.js'
import { booleanArgument, integerArgument, stringArgument } from './tool-arguments.js'
import { ToolFileTooLargeError, ToolUnsupportedError } from './tool-errors.js'
import { PATH_SCHEMA, READ_ONLY_ANNOTATIONS } from './tool-schema-parts.js'
import type { ToolArguments, ToolCallContext } from './tool-types.js'
import { workspacePath } from './workspace-paths.js'

/** Files `glob` lists when the call gives no `max_entries`. */
export const DEFAULT_GLOB_MAX_ENTRIES = 500
/** Matching lines `grep` returns when the call gives no `max_matches`. */
export const DEFAULT_GREP_MAX_MATCHES = 200
/** Files `grep` walks when the call gives no `max_files`. */
export const DEFAULT_GREP_MAX_FILES = 2000
/** Files larger than this are counted as skipped by `grep`, not read. */
export const DEFAULT_GREP_MAX_FILE_BYTES = 1_048_576
/** Matching time one `grep` call may spend on the host, all files together. */
export const GREP_MATCH_BUDGET_MS = 2000

const GLOB_PATTERN = {
	type: 'string',
	minLength: 1,
	maxLength: 4096,
	description: 'Glob relative to path, e.g. "**/*.ts" or "src/{a,b}/*.json".',
} as const

function walk(
	sandbox: Sandbox,
	tool: string,
	args: ToolArguments,
	pattern: string,
	maxEntries: number,
	context: ToolCallContext,
): AsyncIterable<SandboxFileEntry> {
	if (!sandbox.walkFiles) throw new ToolUnsupportedError(tool, 'walkFiles')
	return sandbox.walkFiles(stringArgument(args, 'path') ?? sandbox.rootDir, {
		pattern,
		maxEntries,
		includeHidden: booleanArgument(args, 'include_hidden', false),
		...(context.signal ? { signal: context.signal } : {}),
	})
}

export const GLOB_TOOL = defineTool({
	name: 'glob',
	description:
		'Find files whose path matches a glob, under a directory. Answers their paths relative to the workspace root (absolute when outside it) and sizes in bytes.',
	inputSchema: {
		type: 'object',
		properties: {
			pattern: GLOB_PATTERN,
			path: { ...PATH_SCHEMA, description: 'Directory to search (default: the workspace root).' },
			max_entries: {
				type: 'integer',
				minimum: 1,
				maximum: 100_000,
				description: `Most files listed (default ${DEFAULT_GLOB_MAX_ENTRIES}).`,
			},
			include_hidden: {
				type: 'boolean',
				description: 'Match dot-files and dot-directories too (default false).',
			},
		},
		required: ['pattern'],
		additionalProperties: false,
	},
	annotations: { title: 'Find files by glob', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const limit = integerArgument(args, 'max_entries', DEFAULT_GLOB_MAX_ENTRIES)
		const files: SandboxFileEntry[] = []
		// One past the limit says whether there were more.
		for await (const entry of walk(
			sandbox,
			'glob',
			args,
			stringArgument(args, 'pattern') ?? '',
			limit + 1,
			context,
		)) {
			files.push(entry)
		}
		const shown = files.slice(0, limit)
		const truncated = files.length > limit
		const found = shown.map((entry) => ({
			path: workspacePath(sandbox.rootDir, entry.path),
			size: entry.size,
		}))
		const lines = found.map((entry) => entry.path)
		if (truncated) lines.push(`[… more than ${limit} files; narrow the pattern …]`)
		return {
			text: lines.length === 0 ? '(no matches)' : lines.join('\n'),
			data: { files: found, truncated },
		}
	},
})

export const GREP_TOOL = defineTool({
	name: 'grep',
	description:
		'Search file contents for a string (or a regular expression with regex: true), in files matching a glob. Answers path:line: text for each matching line, the path relative to the workspace root (absolute when outside it) and the line 1-based.',
	inputSchema: {
		type: 'object',
		properties: {
			pattern: {
				type: 'string',
				minLength: 1,
				maxLength: 4096,
				description:
					'Text to find in each line: a literal string (default), or a JavaScript regular expression when regex is true.',
			},
			regex: {
				type: 'boolean',
				description: 'Treat pattern as a JavaScript regular expression (default false).',
			},
			ignore_case: {
				type: 'boolean',
				description: 'Match without regard to case (default false).',
			},
			path: { ...PATH_SCHEMA, description: 'Directory to search (default: the workspace root).' },
			glob: { ...GLOB_PATTERN, description: 'Files to search (default "**/*").' },
			include_hidden: {
				type: 'boolean',
				description: 'Search dot-files and dot-directories too (default false).',
			},
			max_matches: {
				type: 'integer',
				minimum: 1,
				maximum: 10_000,
				description: `Stop after this many matching lines (default ${DEFAULT_GREP_MAX_MATCHES}).`,
			},
			max_files: {
				type: 'integer',
				minimum: 1,
				maximum: 100_000,
				description: `Most files walked (default ${DEFAULT_GREP_MAX_FILES}).`,
			},
			max_file_bytes: {
				type: 'integer',
				minimum: 1,
				maximum: 16 * 1024 * 1024,
				description: `Files larger than this many bytes are skipped and counted (default ${DEFAULT_GREP_MAX_FILE_BYTES}).`,
			},
		},
		required: ['pattern'],
		additionalProperties: false,
	},
	annotations: { title: 'Search file contents', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const pattern = compileGrepQuery({
			pattern: stringArgument(args, 'pattern') ?? '',
			regex: booleanArgument(args, 'regex', false),
			ignoreCase: booleanArgument(args, 'ignore_case', false),
		})
		const maxMatches = integerArgument(args, 'max_matches', DEFAULT_GREP_MAX_MATCHES)
		const maxFiles = integerArgument(args, 'max_files', DEFAULT_GREP_MAX_FILES)
		const maxFileBytes = integerArgument(args, 'max_file_bytes', DEFAULT_GREP_MAX_FILE_BYTES)
		const progress = throttledProgress(context)
		const matches: Array<LineMatch & { readonly path: string }> = []
		let searched = 0
		let skipped = 0
		let budget = GREP_MATCH_BUDGET_MS
		const glob = stringArgument(args, 'glob') ?? '**/*'
		for await (const entry of walk(sandbox, 'grep', args, glob, maxFiles, context)) {
			if (matches.length >= maxMatches) break
			if (entry.size > maxFileBytes) {
				skipped++
				continue
			}
			let text: string | undefined
			try {
				text = utf8Text(
					await readBounded(sandbox, 'grep', entry.path, maxFileBytes, context.signal),
				)
			} catch (error) {
				// The file grew past the bound between the walk and the read.
				if (!(error instanceof ToolFileTooLargeError)) throw error
			}
			if (text === undefined) {
				skipped++
				continue
			}
			const started = Date.now()
			const found = await matchLines(
				pattern,
				text,
				maxMatches - matches.length,
				budget,
				context.signal,
			)
			const shown = workspacePath(sandbox.rootDir, entry.path)
			for (const match of found) matches.push({ path: shown, ...match })
			budget = Math.max(1, budget - (Date.now() - started))
			searched++
			progress(searched, `${searched} files searched`)
		}
		const truncated = matches.length >= maxMatches
		const lines = matches.map((match) => `${match.path}:${match.line}: ${match.text}`)
		if (truncated) lines.push(`[… stopped at ${maxMatches} matches …]`)
		return {
			text: lines.length === 0 ? '(no matches)' : lines.join('\n'),
			data: {
				matches: matches.map((match) => ({
					path: match.path,
					line: match.line,
					text: match.text,
				})),
				files_searched: searched,
				files_skipped: skipped,
				truncated,
			},
		}
	},
})

export const SEARCH_TOOLS = [GLOB_TOOL, GREP_TOOL]
