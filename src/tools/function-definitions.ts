/**
 * Tools in the function-calling shape most model APIs take
 * (`{ type: 'function', function: { name, description, parameters } }`), and an error as the
 * result a model is shown instead of an exception: its class, `reason` and message.
 */
import { SandboxError } from '../index.js'
import type { SandboxTool, ToolObjectSchema } from './tool-types.js'

/** One tool in the function-calling shape model APIs take. */
export interface FunctionToolDefinition {
	readonly type: 'function'
	readonly function: {
		readonly name: string
		readonly description: string
		readonly parameters: ToolObjectSchema
	}
}

/** The tools as function definitions, schemas unchanged, in the same order. */
export function toFunctionDefinitions(tools: readonly SandboxTool[]): FunctionToolDefinition[] {
	return tools.map((tool) => ({
		type: 'function',
		function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
	}))
}

/** A failed call as a model is shown it. */
export interface ToolErrorReport {
	readonly name: string
	readonly reason: string
	readonly retryable: boolean
	readonly message: string
}

/** Messages of errors this package did not raise are cut: they were never vetted for secrets. */
const FOREIGN_MESSAGE_CHARS = 200

/** What a failed call tells the model. A `SandboxError`'s message carries no secret by design. */
export function toolErrorReport(error: unknown): ToolErrorReport {
	if (error instanceof SandboxError) {
		return {
			name: error.name,
			reason: error.reason,
			retryable: error.retryable,
			message: error.message,
		}
	}
	const message = error instanceof Error ? error.message : String(error)
	return {
		name: error instanceof Error ? error.name : 'Error',
		reason: 'internal-error',
		retryable: false,
		message: message.slice(0, FOREIGN_MESSAGE_CHARS),
	}
}
