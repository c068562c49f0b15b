/**
 * `createSandboxTools(sandbox)`: the tools of one sandbox — commands, long commands, files,
 * search — as objects an agent loop calls by name. The long-command tools hold timers and input
 * attachments; `close()` releases them (the commands keep running until the sandbox ends).
 */
import type { Sandbox } from '../index.js'
import { BackgroundExecState, backgroundExecTools } from './background-exec-tools.js'
import { execTool } from './exec-tool.js'
import { fileTools } from './file-tools.js'
import { searchTools } from './search-tools.js'
import { UnknownToolError } from './tool-errors.js'
import type { SandboxTool, ToolCallContext, ToolResult } from './tool-types.js'

export interface SandboxToolset {
	readonly sandbox: Sandbox
	readonly tools: readonly SandboxTool[]
	/** Runs the tool named `name`; `UnknownToolError` when there is none. */
	call(name: string, args: unknown, context?: ToolCallContext): Promise<ToolResult>
	/** Clears exec_start timers and detaches input attachments. Idempotent. */
	close(): Promise<void>
}

export function createSandboxTools(sandbox: Sandbox): SandboxToolset {
	const state = new BackgroundExecState()
	const tools = [
		execTool(sandbox),
		...backgroundExecTools(sandbox, state),
		...fileTools(sandbox),
		...searchTools(sandbox),
	]
	const byName = new Map(tools.map((tool) => [tool.name, tool]))
	return {
		sandbox,
		tools,
		call: async (name, args, context) => {
			const tool = byName.get(name)
			if (!tool) throw new UnknownToolError(name)
			return tool.run(args, context)
		},
		close: () => state.close(),
	}
}
