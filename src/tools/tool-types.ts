/**
 * The shape of one tool an agent framework (or the MCP server) calls: a name, a description, a
 * JSON Schema for its arguments, behaviour hints, and `run`. The schema is the one definition of
 * a tool's arguments — what a model is shown and what every call is validated against.
 */

/** The subset of JSON Schema the tools use; plain data, serialisable as it is. */
export type ToolJsonSchema =
	| {
			readonly type: 'string'
			readonly description?: string
			readonly enum?: readonly string[]
			readonly minLength?: number
			readonly maxLength?: number
			readonly pattern?: string
	  }
	| {
			readonly type: 'integer'
			readonly description?: string
			readonly minimum?: number
			readonly maximum?: number
	  }
	| { readonly type: 'boolean'; readonly description?: string }
	| {
			readonly type: 'array'
			readonly description?: string
			readonly items: ToolJsonSchema
			readonly minItems?: number
			readonly maxItems?: number
	  }
	| ToolObjectSchema

/** An object schema; `additionalProperties` is a schema for maps (`env`) or false. */
export interface ToolObjectSchema {
	readonly type: 'object'
	readonly description?: string
	readonly properties: Readonly<Record<string, ToolJsonSchema>>
	readonly required?: readonly string[]
	readonly additionalProperties: false | ToolJsonSchema
	readonly maxProperties?: number
}

/** The MCP tool annotations, which agent frameworks read the same way. */
export interface ToolAnnotations {
	readonly title?: string
	readonly readOnlyHint: boolean
	readonly destructiveHint: boolean
	readonly idempotentHint: boolean
	readonly openWorldHint: boolean
}

/** One progress report of a long call: a monotonic count and what it counts. */
export interface ToolProgress {
	readonly progress: number
	readonly total?: number
	readonly message?: string
}

/** What a caller hands a call besides its arguments. */
export interface ToolCallContext {
	/** Aborting cancels the call; a running command is terminated. */
	readonly signal?: AbortSignal
	/** Told as a long call advances; must not throw. */
	readonly onProgress?: (progress: ToolProgress) => void
}

/** What a call answers: text for the model, the same facts as data for a program. */
export interface ToolResult {
	readonly text: string
	readonly data: Readonly<Record<string, unknown>>
}

/** Validated arguments: what the schema admitted, by property name. */
export type ToolArguments = Readonly<Record<string, unknown>>

/** One tool bound to one sandbox. */
export interface SandboxTool {
	readonly name: string
	readonly description: string
	readonly inputSchema: ToolObjectSchema
	readonly annotations: ToolAnnotations
	/** Validates `args` against `inputSchema` (`SandboxArgumentError`), then runs. */
	run(args: unknown, context?: ToolCallContext): Promise<ToolResult>
}
