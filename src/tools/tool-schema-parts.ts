/**
 * Schema pieces several tools share, so a parameter means the same everywhere it appears.
 */
import type { ToolJsonSchema } from './tool-types.js'

export const MAX_TOOL_TIMEOUT_MS = 3_600_000

export const PATH_SCHEMA = {
	type: 'string',
	minLength: 1,
	maxLength: 4096,
	description: 'Path inside the sandbox; relative paths resolve against the workspace root.',
} as const satisfies ToolJsonSchema

export const COMMAND_PROPERTIES = {
	command: {
		type: 'string',
		minLength: 1,
		maxLength: 65_536,
		description:
			'A shell command line, run by /bin/sh -c in the workspace root. Give either command or argv.',
	},
	argv: {
		type: 'array',
		minItems: 1,
		maxItems: 4096,
		items: { type: 'string', maxLength: 65_536, description: 'One argument, passed as it is.' },
		description: 'Program and arguments, run without a shell. Give either command or argv.',
	},
	cwd: {
		...PATH_SCHEMA,
		description:
			'Working directory; relative paths resolve against the workspace root (the default).',
	},
	env: {
		type: 'object',
		properties: {},
		additionalProperties: { type: 'string', maxLength: 65_536, description: 'The value.' },
		maxProperties: 256,
		description:
			'Environment variables on top of the sandbox defaults. Never pass credentials: the server supplies those.',
	},
} as const satisfies Readonly<Record<string, ToolJsonSchema>>

/** The annotations of a tool that only reads the sandbox. */
export const READ_ONLY_ANNOTATIONS = {
	readOnlyHint: true,
	destructiveHint: false,
	idempotentHint: true,
	openWorldHint: false,
} as const
