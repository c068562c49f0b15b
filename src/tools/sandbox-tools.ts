/**
 * `createSandboxTools(sandbox)`: the tools of one sandbox — commands, long commands, files,
 * paths, search, watching, exposed ports — as objects an agent loop calls by name. `SANDBOX_TOOL_DEFINITIONS` is the one list
 * both this and the MCP server serve. The long-command tools hold timers and input attachments;
 * `close()` releases them (the commands keep running until the sandbox ends).
 */
import type { Sandbox } from '../index.js'
import { BackgroundExecState } from './background-exec-state.js'
import { BACKGROUND_EXEC_TOOLS } from './background-exec-tools.js'
import { runToolDefinition, type ToolDefinition } from './define-tool.js'
import { EXEC_TOOL } from './exec-tool.js'
import { FILE_TOOLS } from './file-tools.js'
import { PATH_TOOLS } from './path-tools.js'
import { SEARCH_TOOLS } from './search-tools.js'
import { UnknownToolError } from './tool-errors.js'
import type { SandboxTool, ToolCallContext, ToolResult } from './tool-types.js'
import { WATCH_PORT_TOOLS } from './watch-port-tools.js'

/** Every tool a sandbox offers, in the order they are listed. */
export const SANDBOX_TOOL_DEFINITIONS: readonly ToolDefinition[] = [
	EXEC_TOOL,
	...BACKGROUND_EXEC_TOOLS,
	...FILE_TOOLS,
	...PATH_TOOLS,
	...SEARCH_TOOLS,
	...WATCH_PORT_TOOLS,
]

/** The tools of one sandbox, callable by name. */
export interface SandboxToolset {
	readonly sandbox: Sandbox
	readonly tools: readonly SandboxTool[]
	/** Runs the tool named `name`; `UnknownToolError` when there is none. */
	call(name: string, args: unknown, context?: ToolCallContext): Promise<ToolResult>
	/** Clears exec_start timers and detaches input attachments. Idempotent. */
	close(): Promise<void>
}

/** The tools of `sandbox`; long-command tools refuse by name on a sandbox without sessions. */
export function createSandboxTools(sandbox: Sandbox): SandboxToolset {
	const target = { sandbox, background: new BackgroundExecState() }
	const tools: SandboxTool[] = SANDBOX_TOOL_DEFINITIONS.map((definition) => ({
		name: definition.name,
		description: definition.description,
		inputSchema: definition.inputSchema,
		annotations: definition.annotations,
		run: (args, context) => runToolDefinition(definition, target, args, context),
	}))
	const byName = new Map(tools.map((tool) => [tool.name, tool]))
	return {
		sandbox,
		tools,
		call: async (name, args, context) => {
			const tool = byName.get(name)
			if (!tool) throw new UnknownToolError(name)
			return tool.run(args, context)
		},
		close: () => target.background.close(),
	}
}
