/**
 * `@namzu/sandbox/tools`: a `Sandbox` as tools an agent framework calls — each with a JSON Schema
 * for its arguments, MCP-style annotations and `run` — and the same tools in the common
 * function-calling shape. The MCP server (`namzu-sandbox mcp`) serves exactly these tools, with a
 * `sandbox_id` added to each.
 */
export {
	DEFAULT_READ_MAX_BYTES,
	hasSessionVerbs,
	MAX_READ_WAIT_MS,
	type SessionVerbs,
} from './background-exec-tools.js'
export {
	DEFAULT_EXEC_TIMEOUT_MS,
	DEFAULT_MAX_OUTPUT_BYTES,
	HOST_CAPTURE_BYTES,
} from './exec-tool.js'
export {
	DEFAULT_LIST_MAX_ENTRIES,
	DEFAULT_READ_FILE_MAX_BYTES,
	MAX_READ_FILE_RANGE_BYTES,
	MAX_WHOLE_FILE_BYTES,
} from './file-tools.js'
export {
	type FunctionToolDefinition,
	type ToolErrorReport,
	toFunctionDefinitions,
	toolErrorReport,
} from './function-definitions.js'
export { createSandboxTools, type SandboxToolset } from './sandbox-tools.js'
export {
	DEFAULT_GLOB_MAX_ENTRIES,
	DEFAULT_GREP_MAX_FILE_BYTES,
	DEFAULT_GREP_MAX_FILES,
	DEFAULT_GREP_MAX_MATCHES,
	GREP_MATCH_BUDGET_MS,
} from './search-tools.js'
export { validateToolArguments } from './tool-arguments.js'
export {
	EditMatchAmbiguousError,
	EditMatchNotFoundError,
	ExecStdinUnavailableError,
	GrepPatternTimeoutError,
	ToolFileTooLargeError,
	ToolUnsupportedError,
	UnknownToolError,
} from './tool-errors.js'
export type {
	SandboxTool,
	ToolAnnotations,
	ToolArguments,
	ToolCallContext,
	ToolJsonSchema,
	ToolObjectSchema,
	ToolProgress,
	ToolResult,
} from './tool-types.js'
