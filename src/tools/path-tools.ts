/**
 * The path tools over the sandbox's file verbs: `stat`, `list_directory` (one level, paged by
 * cursor), `mkdir`, `remove` (idempotent: an absent path is already removed) and `rename`. Paths
 * in results are relative to the workspace root (absolute outside it).
 */
import { type Sandbox, type SandboxDirectoryEntry, SandboxFileError } from '../contract-entry.js'
import { defineTool } from './define-tool.js'
import { booleanArgument, integerArgument, stringArgument } from './tool-arguments.js'
import { ToolUnsupportedError } from './tool-errors.js'
import { PATH_SCHEMA, READ_ONLY_ANNOTATIONS } from './tool-schema-parts.js'
import type { ToolArguments } from './tool-types.js'
import { workspacePath } from './workspace-paths.js'

/** Entries `list_directory` answers per page when the call gives no `limit`. */
export const DEFAULT_LIST_DIRECTORY_LIMIT = 200

function signalOption(signal: AbortSignal | undefined): { signal?: AbortSignal } {
	return signal ? { signal } : {}
}

function verb<K extends keyof Sandbox>(
	sandbox: Sandbox,
	tool: string,
	name: K,
): NonNullable<Sandbox[K]> {
	const method = sandbox[name]
	if (typeof method !== 'function') throw new ToolUnsupportedError(tool, `${String(name)}()`)
	return method.bind(sandbox) as NonNullable<Sandbox[K]>
}

function pathOf(args: ToolArguments): string {
	return stringArgument(args, 'path') ?? '.'
}

function modeText(mode: number): string {
	return `0${(mode & 0o7777).toString(8)}`
}

function entryData(root: string, entry: SandboxDirectoryEntry) {
	return {
		name: entry.name,
		path: workspacePath(root, entry.path),
		type: entry.type,
		size: entry.size,
		mode: modeText(entry.mode),
		mtime_ms: entry.mtimeMs,
		...(entry.symlinkTarget === undefined ? {} : { symlink_target: entry.symlinkTarget }),
	}
}

export const STAT_TOOL = defineTool({
	name: 'stat',
	description:
		'What a path is: its type (file, directory, symlink, other), size in bytes, permission bits and modification time. A missing path is answered as exists: false, not an error.',
	inputSchema: {
		type: 'object',
		properties: { path: PATH_SCHEMA },
		required: ['path'],
		additionalProperties: false,
	},
	annotations: { title: 'Stat a path', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const shown = workspacePath(sandbox.rootDir, path)
		try {
			const info = await verb(sandbox, 'stat', 'stat')(path, signalOption(context.signal))
			const data = {
				path: shown,
				exists: true,
				type: info.type,
				size: info.size,
				mode: modeText(info.mode),
				mtime_ms: info.mtimeMs,
				...(info.symlinkTarget === undefined ? {} : { symlink_target: info.symlinkTarget }),
			}
			return {
				text: `${shown}: ${info.type}, ${info.size} bytes, mode ${data.mode}, modified ${new Date(info.mtimeMs).toISOString()}${info.symlinkTarget === undefined ? '' : `, -> ${info.symlinkTarget}`}`,
				data,
			}
		} catch (error) {
			if (!(error instanceof SandboxFileError) || error.code !== 'ENOENT') throw error
			return { text: `${shown}: does not exist`, data: { path: shown, exists: false } }
		}
	},
})

export const LIST_DIRECTORY_TOOL = defineTool({
	name: 'list_directory',
	description:
		'One level of a directory: each entry with its type, size and mode, in name order, a page at a time. When the answer has next_cursor, call again with it for the next page. For a recursive list of files use list_files.',
	inputSchema: {
		type: 'object',
		properties: {
			path: { ...PATH_SCHEMA, description: 'Directory (default: the workspace root).' },
			limit: {
				type: 'integer',
				minimum: 1,
				maximum: 5000,
				description: `Entries per page (default ${DEFAULT_LIST_DIRECTORY_LIMIT}).`,
			},
			cursor: {
				type: 'string',
				minLength: 1,
				maxLength: 4096,
				description: 'The next_cursor of the page before; omit for the first page.',
			},
		},
		additionalProperties: false,
	},
	annotations: { title: 'List a directory', ...READ_ONLY_ANNOTATIONS },
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const cursor = stringArgument(args, 'cursor')
		const page = await verb(
			sandbox,
			'list_directory',
			'listDirectory',
		)(path, {
			limit: integerArgument(args, 'limit', DEFAULT_LIST_DIRECTORY_LIMIT),
			...(cursor === undefined ? {} : { cursor }),
			...signalOption(context.signal),
		})
		const entries = page.entries.map((entry) => entryData(sandbox.rootDir, entry))
		const lines = entries.map(
			(entry) => `${entry.type === 'directory' ? `${entry.name}/` : entry.name}\t${entry.size}`,
		)
		if (page.nextCursor !== undefined) lines.push('[… more: call again with next_cursor …]')
		return {
			text: lines.length === 0 ? '(empty directory)' : lines.join('\n'),
			data: {
				path: workspacePath(sandbox.rootDir, path),
				entries,
				...(page.nextCursor === undefined ? {} : { next_cursor: page.nextCursor }),
			},
		}
	},
})

export const MKDIR_TOOL = defineTool({
	name: 'mkdir',
	description:
		'Create a directory, with its missing parents unless parents is false. An existing directory is left as it is.',
	inputSchema: {
		type: 'object',
		properties: {
			path: PATH_SCHEMA,
			parents: {
				type: 'boolean',
				description:
					'Create missing parent directories too, and accept an existing one (default true).',
			},
		},
		required: ['path'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Create a directory',
		readOnlyHint: false,
		destructiveHint: false,
		idempotentHint: true,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const recursive = booleanArgument(args, 'parents', true)
		await verb(sandbox, 'mkdir', 'mkdir')(path, { recursive, ...signalOption(context.signal) })
		const shown = workspacePath(sandbox.rootDir, path)
		return { text: `created ${shown}`, data: { path: shown } }
	},
})

export const REMOVE_TOOL = defineTool({
	name: 'remove',
	description:
		'Remove a file, a symlink (not what it points to) or an empty directory; with recursive, a whole directory tree. A path that does not exist is answered as already removed.',
	inputSchema: {
		type: 'object',
		properties: {
			path: PATH_SCHEMA,
			recursive: {
				type: 'boolean',
				description: 'Remove a directory and everything in it (default false).',
			},
		},
		required: ['path'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Remove a path',
		readOnlyHint: false,
		destructiveHint: true,
		idempotentHint: true,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const path = pathOf(args)
		const shown = workspacePath(sandbox.rootDir, path)
		const recursive = booleanArgument(args, 'recursive', false)
		try {
			await verb(sandbox, 'remove', 'remove')(path, { recursive, ...signalOption(context.signal) })
		} catch (error) {
			if (!(error instanceof SandboxFileError) || error.code !== 'ENOENT') throw error
			return { text: `${shown}: already absent`, data: { path: shown, removed: false } }
		}
		return { text: `removed ${shown}`, data: { path: shown, removed: true } }
	},
})

export const RENAME_TOOL = defineTool({
	name: 'rename',
	description:
		'Move or rename a file or directory. A file already at the destination is replaced; the destination directory must exist.',
	inputSchema: {
		type: 'object',
		properties: {
			from: {
				...PATH_SCHEMA,
				description: 'What to move; relative paths resolve against the workspace root.',
			},
			to: {
				...PATH_SCHEMA,
				description: 'Where it goes; relative paths resolve against the workspace root.',
			},
		},
		required: ['from', 'to'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Move or rename',
		readOnlyHint: false,
		destructiveHint: true,
		idempotentHint: false,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const from = stringArgument(args, 'from') ?? ''
		const to = stringArgument(args, 'to') ?? ''
		await verb(sandbox, 'rename', 'rename')(from, to, signalOption(context.signal))
		const shownFrom = workspacePath(sandbox.rootDir, from)
		const shownTo = workspacePath(sandbox.rootDir, to)
		return { text: `moved ${shownFrom} to ${shownTo}`, data: { from: shownFrom, to: shownTo } }
	},
})

export const PATH_TOOLS = [STAT_TOOL, LIST_DIRECTORY_TOOL, MKDIR_TOOL, REMOVE_TOOL, RENAME_TOOL]
