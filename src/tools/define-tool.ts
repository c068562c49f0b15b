/**
 * A tool from its definition: the arguments are checked against the tool's own schema before the
 * handler sees them, so every handler reads validated values only. A definition is independent of
 * any sandbox — the handler is given the sandbox it runs against — so the toolset of one sandbox
 * and the MCP server (which names the sandbox in each call) serve the same definitions.
 */
import type { Sandbox } from '../index.js'
import { SandboxArgumentError } from '../index.js'
import type { BackgroundExecState } from './background-exec-state.js'
import { stringArgument, stringArrayArgument, validateToolArguments } from './tool-arguments.js'
import type {
	ToolAnnotations,
	ToolArguments,
	ToolCallContext,
	ToolObjectSchema,
	ToolResult,
} from './tool-types.js'

/** What a handler runs against: the sandbox, and what the long-command tools hold for it. */
export interface ToolTarget {
	readonly sandbox: Sandbox
	readonly background: BackgroundExecState
}

export interface ToolDefinition {
	readonly name: string
	readonly description: string
	readonly inputSchema: ToolObjectSchema
	readonly annotations: ToolAnnotations
	/** Runs with arguments already validated against `inputSchema`. */
	readonly handler: (
		target: ToolTarget,
		args: ToolArguments,
		context: ToolCallContext,
	) => Promise<ToolResult>
}

export function defineTool(definition: ToolDefinition): ToolDefinition {
	return definition
}

/** Validates, then runs: the one way a definition is called. */
export function runToolDefinition(
	definition: ToolDefinition,
	target: ToolTarget,
	args: unknown,
	context: ToolCallContext = {},
): Promise<ToolResult> {
	const validated = validateToolArguments(definition.name, definition.inputSchema, args)
	return definition.handler(target, validated, context)
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
