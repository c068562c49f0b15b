/**
 * One MCP `Server` (the official SDK's low-level server) over the tool catalog: `tools/list`
 * answers the catalog; `tools/call` runs a tool with the request's abort signal (a client's
 * cancellation terminates the command) and turns its progress into `notifications/progress` when
 * the client asked for them. A failure is a tool error naming the error's class and `reason`,
 * never a protocol error and never a stack.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
	CallToolRequestSchema,
	type CallToolResult,
	ListToolsRequestSchema,
	type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { toolErrorReport } from '../tools/function-definitions.js'
import { UnknownToolError } from '../tools/tool-errors.js'
import type { ToolProgress } from '../tools/tool-types.js'
import { type McpTool, mcpToolCatalog } from './mcp-tool-catalog.js'
import type { McpSandboxes } from './sandbox-registry.js'

export const MCP_SERVER_NAME = 'namzu-sandbox'

function listed(tool: McpTool): Tool {
	// The schema is plain data; the SDK's type wants mutable arrays.
	const inputSchema = JSON.parse(JSON.stringify(tool.inputSchema)) as Tool['inputSchema']
	return {
		name: tool.name,
		description: tool.description,
		inputSchema,
		annotations: { ...tool.annotations },
	}
}

/** A tool's failure as the client sees it. */
export function errorResult(error: unknown): CallToolResult {
	const report = toolErrorReport(error)
	return {
		isError: true,
		content: [{ type: 'text', text: `${report.name} (${report.reason}): ${report.message}` }],
		structuredContent: { error: { ...report } },
	}
}

/** A server for one client connection, over that client's view of the sandboxes. */
export function createMcpServer(sandboxes: McpSandboxes, version: string): Server {
	const catalog = mcpToolCatalog(sandboxes)
	const byName = new Map(catalog.map((tool) => [tool.name, tool]))
	const server = new Server(
		{ name: MCP_SERVER_NAME, version },
		{
			capabilities: { tools: {} },
			instructions:
				'Run code in isolated sandboxes. Start with sandbox_create and read its answer: the network (often none, so no pip install), the limits, the workspace root and how to start a background server. Pass its sandbox_id to every other tool. Use exec for short commands, exec_start/exec_read for long ones; start servers in the background with output redirected (nohup CMD >log 2>&1 &).',
		},
	)
	server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: catalog.map(listed) }))
	server.setRequestHandler(
		CallToolRequestSchema,
		async (request, extra): Promise<CallToolResult> => {
			const tool = byName.get(request.params.name)
			if (!tool) return errorResult(new UnknownToolError(request.params.name))
			const progressToken = request.params._meta?.progressToken
			const onProgress =
				progressToken === undefined
					? undefined
					: (progress: ToolProgress) => {
							extra
								.sendNotification({
									method: 'notifications/progress',
									params: { progressToken, ...progress },
								})
								.catch(() => undefined)
						}
			try {
				const result = await tool.call(request.params.arguments ?? {}, {
					signal: extra.signal,
					...(onProgress ? { onProgress } : {}),
				})
				return {
					content: [{ type: 'text', text: result.text }],
					structuredContent: { ...result.data },
				}
			} catch (error) {
				return errorResult(error)
			}
		},
	)
	return server
}
