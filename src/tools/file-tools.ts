/**
 * The file tools: `read_file` (a line range or a byte range, bounded), `write_file` (atomic, as
 * the sandbox writes), `edit_file` (exact search and replace; a missing or ambiguous match is a
 * named error and nothing is written), `list_files`.
 */
import { SandboxArgumentError } from '../index.js'
import { readBounded, utf8Text } from './bounded-read.js'
import { defineTool } from './define-tool.js'
import { applyExactEdit } from './edit-match.js'
import { selectLines } from './line-range.js'
import { boundText } from './output-budget.js'
import {
	booleanArgument,
	integerArgument,
	optionalIntegerArgument,
	stringArgument,
} from './tool-arguments.js'
import { PATH_SCHEMA, READ_ONLY_ANNOTATIONS } from './tool-schema-parts.js'
import type { ToolArguments } from './tool-types.js'
import { workspacePath } from './workspace-paths.js'

/** Bytes `read_file` returns when the call gives no `max_bytes`. */
export const DEFAULT_READ_FILE_MAX_BYTES = 65_536
/** The most a byte range reads in one call (the sandbox serves ranges of at most 1 MiB). */
export const MAX_READ_FILE_RANGE_BYTES = 1_048_576
/** Files a tool reads whole (line ranges, edits, grep) are refused past this. */
export const MAX_WHOLE_FILE_BYTES = 16 * 1024 * 1024
/** Files `list_files` shows when the call gives no `max_entries`. */
export const DEFAULT_LIST_MAX_ENTRIES = 1000

function pathOf(args: ToolArguments): string {
	return stringArgument(args, 'path') ?? ''
}

function signalOption(signal: AbortSignal | undefined): { signal?: AbortSignal } {
	return signal ? { signal } : {}
}

export const READ_FILE_TOOL = defineTool({
	name: 'read_file',
	description:
		'Read a file. Either a line range (start_line, end_line; 1-based, inclusive) or a byte range (offset, length); default the whole file from the start. Output is cut to max_bytes with a marker.',
	inputSchema: {
		type: 'object',
		properties: {
			path: PATH_SCHEMA,
			start_line: {
				type: 'integer',
				minimum: 1,
				maximum: Number.MAX_SAFE_INTEGER,
				description:
					'First line to return, 1-based (default 1). Not with offset/length. The file is read whole, so at most 16 MiB.',
			},
			end_line: {
				type: 'integer',
				minimum: 1,
				maximum: Number.MAX_SAFE_INTEGER,
				description: 'Last line to return, 1-based and inclusive (default: the last line).',
			},
			offset: {
				type: 'integer',
				minimum: 0,
				maximum: Number.MAX_SAFE_INTEGER,
				description:
					'Byte offset to start reading at, 0-based (default 0). Not with start_line/end_line.',
			},
			length: {
				type: 'integer',
				minimum: 1,
				maximum: MAX_READ_FILE_RANGE_BYTES,
				description: 'Bytes to read from offset (default and most: max_bytes).',
			},
			max_bytes: {
				type: 'integer',
				minimum: 1,
				maximum: MAX_READ_FILE_RANGE_BYTES,
				description: `Most bytes returned (default ${DEFAULT_READ_FILE_MAX_BYTES}).`,
			},
		},
		required: ['path'],
		additionalProperties: false,
	},
	annotations: { title: 'Read a file', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const maxBytes = integerArgument(args, 'max_bytes', DEFAULT_READ_FILE_MAX_BYTES)
		const startLine = optionalIntegerArgument(args, 'start_line')
		const endLine = optionalIntegerArgument(args, 'end_line')
		const offset = optionalIntegerArgument(args, 'offset')
		const length = optionalIntegerArgument(args, 'length')
		const lines = startLine !== undefined || endLine !== undefined
		if (lines && (offset !== undefined || length !== undefined)) {
			throw new SandboxArgumentError(
				'read_file',
				'offset',
				'absent when a line range is given',
				'both a line and a byte range',
			)
		}
		if (endLine !== undefined && endLine < (startLine ?? 1)) {
			throw new SandboxArgumentError(
				'read_file',
				'end_line',
				'at least start_line',
				String(endLine),
			)
		}
		if (lines) {
			const bytes = await readBounded(
				sandbox,
				'read_file',
				path,
				MAX_WHOLE_FILE_BYTES,
				context.signal,
			)
			const selection = selectLines(bytes.toString('utf8'), startLine ?? 1, endLine)
			const bounded = boundText(selection.text, maxBytes)
			return {
				text: bounded.text,
				data: {
					path: workspacePath(sandbox.rootDir, path),
					content: bounded.text,
					encoding: 'utf8',
					start_line: selection.startLine,
					end_line: selection.endLine,
					total_lines: selection.totalLines,
					truncated: bounded.truncated,
				},
			}
		}
		const from = offset ?? 0
		const wanted = Math.min(length ?? maxBytes, maxBytes)
		// One byte more than wanted says whether the file goes on.
		const bytes = await sandbox.readFile(path, {
			offset: from,
			length: Math.min(wanted + 1, MAX_READ_FILE_RANGE_BYTES),
			...signalOption(context.signal),
		})
		const kept = bytes.subarray(0, wanted)
		const more = bytes.length > wanted
		const truncated = more && (length === undefined || length > maxBytes)
		const text = utf8Text(kept)
		const content = text ?? kept.toString('base64')
		const marker = truncated
			? `\n[… cut at ${wanted} bytes; read on from offset ${from + wanted} …]`
			: ''
		return {
			text: text === undefined ? `[base64]\n${content}${marker}` : `${content}${marker}`,
			data: {
				path: workspacePath(sandbox.rootDir, path),
				content,
				encoding: text === undefined ? 'base64' : 'utf8',
				offset: from,
				bytes: kept.length,
				truncated,
				more,
			},
		}
	},
})

export const WRITE_FILE_TOOL = defineTool({
	name: 'write_file',
	description:
		'Create or replace a file (atomic: readers see the old or the new contents, never a mix). Parent directories are created.',
	inputSchema: {
		type: 'object',
		properties: {
			path: PATH_SCHEMA,
			content: {
				type: 'string',
				maxLength: 16 * 1024 * 1024,
				description:
					'The whole new contents of the file (at most 16 MiB), as text, or base64 when encoding is base64. Replaces what was there.',
			},
			encoding: {
				type: 'string',
				enum: ['utf8', 'base64'],
				description: 'How content is encoded (default utf8).',
			},
		},
		required: ['path', 'content'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Write a file',
		readOnlyHint: false,
		destructiveHint: true,
		idempotentHint: true,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const raw = stringArgument(args, 'content') ?? ''
		const content = stringArgument(args, 'encoding') === 'base64' ? Buffer.from(raw, 'base64') : raw
		await sandbox.writeFile(path, content, signalOption(context.signal))
		const bytes = typeof content === 'string' ? Buffer.byteLength(content) : content.length
		const shown = workspacePath(sandbox.rootDir, path)
		return { text: `wrote ${bytes} bytes to ${shown}`, data: { path: shown, bytes } }
	},
})

export const EDIT_FILE_TOOL = defineTool({
	name: 'edit_file',
	description:
		'Replace an exact string in a file. old_string must occur exactly once (or set replace_all); otherwise nothing is written and the error says whether it was missing or ambiguous.',
	inputSchema: {
		type: 'object',
		properties: {
			path: PATH_SCHEMA,
			old_string: {
				type: 'string',
				minLength: 1,
				maxLength: 1_048_576,
				description:
					'The exact text to replace, whitespace and indentation included (no regular expression). Must occur exactly once unless replace_all.',
			},
			new_string: {
				type: 'string',
				maxLength: 1_048_576,
				description: 'The text put in its place, exactly as given (may be empty to delete).',
			},
			replace_all: { type: 'boolean', description: 'Replace every occurrence (default false).' },
		},
		required: ['path', 'old_string', 'new_string'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Edit a file',
		readOnlyHint: false,
		destructiveHint: true,
		idempotentHint: false,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const bytes = await readBounded(
			sandbox,
			'edit_file',
			path,
			MAX_WHOLE_FILE_BYTES,
			context.signal,
		)
		const text = utf8Text(bytes)
		if (text === undefined) {
			throw new SandboxArgumentError('edit_file', 'path', 'a UTF-8 text file', 'a binary file')
		}
		const edit = applyExactEdit(
			path,
			text,
			stringArgument(args, 'old_string') ?? '',
			stringArgument(args, 'new_string') ?? '',
			booleanArgument(args, 'replace_all', false),
		)
		await sandbox.writeFile(path, edit.content, signalOption(context.signal))
		const shown = workspacePath(sandbox.rootDir, path)
		return {
			text: `replaced ${edit.replacements} occurrence${edit.replacements === 1 ? '' : 's'} in ${shown}`,
			data: { path: shown, replacements: edit.replacements },
		}
	},
})

export const LIST_FILES_TOOL = defineTool({
	name: 'list_files',
	description:
		'List the regular files under a directory, recursively, with their sizes in bytes. Paths are relative to the workspace root (absolute when outside it).',
	inputSchema: {
		type: 'object',
		properties: {
			path: { ...PATH_SCHEMA, description: 'Directory (default: the workspace root).' },
			max_entries: {
				type: 'integer',
				minimum: 1,
				maximum: 100_000,
				description: `Most files listed (default ${DEFAULT_LIST_MAX_ENTRIES}); the rest are counted.`,
			},
		},
		additionalProperties: false,
	},
	annotations: { title: 'List files', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const root = stringArgument(args, 'path') ?? sandbox.rootDir
		const limit = integerArgument(args, 'max_entries', DEFAULT_LIST_MAX_ENTRIES)
		const entries = await sandbox.listFiles(root, signalOption(context.signal))
		const shown = entries.slice(0, limit)
		const more = entries.length - shown.length
		const files = shown.map((entry) => ({
			path: workspacePath(sandbox.rootDir, entry.path),
			size: entry.size,
		}))
		const lines = files.map((entry) => `${entry.path}\t${entry.size}`)
		if (more > 0) lines.push(`[… ${more} more files not shown …]`)
		return {
			text: lines.length === 0 ? '(no files)' : lines.join('\n'),
			data: {
				path: workspacePath(sandbox.rootDir, root),
				files,
				total: entries.length,
				truncated: more > 0,
			},
		}
	},
})

export const FILE_TOOLS = [READ_FILE_TOOL, WRITE_FILE_TOOL, EDIT_FILE_TOOL, LIST_FILES_TOOL]
