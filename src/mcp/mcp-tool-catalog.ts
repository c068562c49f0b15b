/**
 * The MCP server's tools: the sandbox lifecycle (`sandbox_create`, `sandbox_list`,
 * `sandbox_destroy`) and every sandbox tool of `@namzu/sandbox/tools` with an explicit
 * `sandbox_id` added — there is no hidden "current sandbox".
 */
import { runToolDefinition, type ToolDefinition } from '../tools/define-tool.js'
import { SANDBOX_TOOL_DEFINITIONS } from '../tools/sandbox-tools.js'
import { booleanArgument, stringArgument, validateToolArguments } from '../tools/tool-arguments.js'
import type {
	ToolAnnotations,
	ToolCallContext,
	ToolJsonSchema,
	ToolObjectSchema,
	ToolResult,
} from '../tools/tool-types.js'
import { BACKGROUND_SERVER_HINT, type McpSandboxFacts } from './sandbox-facts.js'
import type { McpSandboxes, RegisteredSandbox } from './sandbox-registry.js'

export interface McpTool {
	readonly name: string
	readonly description: string
	readonly inputSchema: ToolObjectSchema
	readonly annotations: ToolAnnotations
	call(args: unknown, context: ToolCallContext): Promise<ToolResult>
}

const SANDBOX_ID_SCHEMA = {
	type: 'string',
	minLength: 1,
	maxLength: 128,
	description: 'The sandbox_id sandbox_create answered.',
} as const satisfies ToolJsonSchema

const NAME_SCHEMA = {
	type: 'string',
	pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
	description:
		'A name of your choosing: creating the same name again answers the same sandbox instead of a new one.',
} as const satisfies ToolJsonSchema

function describe(entry: RegisteredSandbox): Record<string, unknown> {
	const { sandbox } = entry.target
	return {
		sandbox_id: sandbox.id,
		...(entry.name === undefined ? {} : { name: entry.name }),
		status: sandbox.status,
		workspace_root: sandbox.rootDir,
		keep_alive: entry.keepAlive,
	}
}

/** `sandbox_create`'s answer: the sandbox, and what a model must know before using it. */
function createdResult(
	entry: RegisteredSandbox,
	existed: boolean,
	facts: McpSandboxFacts,
): ToolResult {
	const { sandbox } = entry.target
	const text = [
		`sandbox ${sandbox.id} ${existed ? 'exists' : 'created'} (tier ${facts.tier}${facts.image === undefined ? '' : `, image ${facts.image}`}).`,
		`Workspace root: ${sandbox.rootDir} — commands start there; relative paths in every tool resolve against it, and paths in results are relative to it.`,
		`Network: ${facts.network.policy}. ${facts.network.detail}`,
		`Limits: ${facts.limitsText}`,
		`Background servers: ${BACKGROUND_SERVER_HINT}`,
		`Lifetime: ${facts.lifetime}`,
	].join('\n')
	const data = {
		...describe(entry),
		existed,
		tier: facts.tier,
		...(facts.image === undefined ? {} : { image: facts.image }),
		network: facts.network,
		limits: facts.limits,
		background_servers: BACKGROUND_SERVER_HINT,
		lifetime: facts.lifetime,
	}
	return { text, data }
}

function withSandboxId(schema: ToolObjectSchema): ToolObjectSchema {
	return {
		...schema,
		properties: { sandbox_id: SANDBOX_ID_SCHEMA, ...schema.properties },
		required: ['sandbox_id', ...(schema.required ?? [])],
	}
}

function sandboxTool(definition: ToolDefinition, registry: McpSandboxes): McpTool {
	const inputSchema = withSandboxId(definition.inputSchema)
	return {
		name: definition.name,
		description: definition.description,
		inputSchema,
		annotations: definition.annotations,
		call: async (args, context) => {
			const { sandbox_id: sandboxId, ...rest } = validateToolArguments(
				definition.name,
				inputSchema,
				args,
			)
			const entry = await registry.resolve(String(sandboxId), context.signal)
			return runToolDefinition(definition, entry.target, rest, context)
		},
	}
}

// long: a table of the lifecycle tools (schema, description, handler each), declarations only
function lifecycleTools(registry: McpSandboxes): McpTool[] {
	const createSchema: ToolObjectSchema = {
		type: 'object',
		properties: {
			name: NAME_SCHEMA,
			keep_alive: {
				type: 'boolean',
				description:
					'Keep the sandbox running when this server stops (default false: it is destroyed then).',
			},
		},
		additionalProperties: false,
	}
	const idSchema: ToolObjectSchema = {
		type: 'object',
		properties: { sandbox_id: SANDBOX_ID_SCHEMA },
		required: ['sandbox_id'],
		additionalProperties: false,
	}
	return [
		{
			name: 'sandbox_create',
			description:
				'Create a sandbox (the server decides its tier, limits and network). Answers its sandbox_id, which every other tool takes, and what it offers: the network (often none: no DNS, no pip install), the limits, the workspace root and how to start a background server. With a name, creating again answers the same sandbox.',
			inputSchema: createSchema,
			// Without a name every call makes another sandbox, so the tool as a whole is not idempotent.
			annotations: {
				title: 'Create a sandbox',
				readOnlyHint: false,
				destructiveHint: false,
				idempotentHint: false,
				openWorldHint: false,
			},
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_create', createSchema, args)
				const { entry, existed } = await registry.create(
					stringArgument(valid, 'name'),
					booleanArgument(valid, 'keep_alive', false),
					context.signal,
				)
				return createdResult(entry, existed, registry.facts)
			},
		},
		{
			name: 'sandbox_list',
			description: 'List the sandboxes this server holds.',
			inputSchema: { type: 'object', properties: {}, additionalProperties: false },
			annotations: {
				title: 'List sandboxes',
				readOnlyHint: true,
				destructiveHint: false,
				idempotentHint: true,
				openWorldHint: false,
			},
			call: async (args) => {
				validateToolArguments(
					'sandbox_list',
					{ type: 'object', properties: {}, additionalProperties: false },
					args,
				)
				const sandboxes = registry.list().map(describe)
				const lines = sandboxes.map(
					(entry) => `${entry.sandbox_id}\t${entry.status}${entry.name ? `\t${entry.name}` : ''}`,
				)
				return {
					text: lines.length === 0 ? '(no sandboxes)' : lines.join('\n'),
					data: { sandboxes },
				}
			},
		},
		{
			name: 'sandbox_destroy',
			description:
				'Destroy a sandbox: every process in it ends and its files are removed. Destroying it again answers "already destroyed".',
			inputSchema: idSchema,
			annotations: {
				title: 'Destroy a sandbox',
				readOnlyHint: false,
				destructiveHint: true,
				idempotentHint: true,
				openWorldHint: false,
			},
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_destroy', idSchema, args)
				const id = stringArgument(valid, 'sandbox_id') ?? ''
				const now = await registry.destroy(id, context.signal)
				return {
					text: now ? `sandbox ${id} destroyed` : `sandbox ${id} already destroyed`,
					data: { sandbox_id: id, destroyed: true, already_destroyed: !now },
				}
			},
		},
	]
}

/** Every tool the server lists, lifecycle first. */
export function mcpToolCatalog(registry: McpSandboxes): McpTool[] {
	return [
		...lifecycleTools(registry),
		...SANDBOX_TOOL_DEFINITIONS.map((definition) => sandboxTool(definition, registry)),
	]
}
