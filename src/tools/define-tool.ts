/**
 * A tool from its definition: the arguments are checked against the tool's own schema before the
 * handler sees them, so every handler reads validated values only.
 */
import { SandboxArgumentError } from '../index.js'
import { stringArgument, stringArrayArgument, validateToolArguments } from './tool-arguments.js'
import type {
	SandboxTool,
	ToolAnnotations,
	ToolArguments,
	ToolCallContext,
	ToolObjectSchema,
	ToolResult,
} from './tool-types.js'

export interface ToolDefinition {
	readonly name: string
	readonly description: string
	readonly inputSchema: ToolObjectSchema
	readonly annotations: ToolAnnotations
	readonly handler: (args: ToolArguments, context: ToolCallContext) => Promise<ToolResult>
}

export function defineTool(definition: ToolDefinition): SandboxTool {
	const { handler, ...described } = definition
	return {
		...described,
		run: async (args, context = {}) =>
			handler(validateToolArguments(definition.name, definition.inputSchema, args), context),
	}
}

/** `command` (a shell line) or `argv` (no shell): exactly one, as the program and its arguments. */
export function commandOf(
	tool: string,
	args: ToolArguments,
): { readonly command: string; readonly args: readonly string[] } {
	const line = stringArgument(args, 'command')
	const argv = stringArrayArgument(args, 'argv')
	if ((line === undefined) === (argv === undefined)) {
		throw new SandboxArgumentError(
			tool,
			'command',
			'exactly one of command or argv',
			line === undefined ? 'neither' : 'both',
		)
	}
	if (line !== undefined) return { command: '/bin/sh', args: ['-c', line] }
	const [program = '', ...rest] = argv ?? []
	return { command: program, args: rest }
}

/** Progress told at most every `intervalMs`, so a chatty command does not flood the client. */
export function throttledProgress(
	context: ToolCallContext,
	intervalMs = 250,
): (progress: number, message: string) => void {
	let last = 0
	return (progress, message) => {
		const now = Date.now()
		if (!context.onProgress || now - last < intervalMs) return
		last = now
		try {
			context.onProgress({ progress, message })
		} catch {
			// `onProgress` must not throw; a throwing listener never breaks the call.
		}
	}
}
