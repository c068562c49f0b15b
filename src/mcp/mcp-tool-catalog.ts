/**
 * The MCP server's tools: the sandbox lifecycle (`sandbox_create`, `sandbox_list`,
 * `sandbox_destroy`) and every sandbox tool of `@namzu/sandbox/tools` with an explicit
 * `sandbox_id` added — there is no hidden "current sandbox".
 */

import { CheckpointUnsupportedError, type Sandbox, type SandboxCheckpoint } from '../index.js'
import { runToolDefinition, type ToolDefinition } from '../tools/define-tool.js'
import { SANDBOX_TOOL_DEFINITIONS } from '../tools/sandbox-tools.js'
import {
	booleanArgument,
	integerArgument,
	stringArgument,
	validateToolArguments,
} from '../tools/tool-arguments.js'
import type {
	ToolAnnotations,
	ToolCallContext,
	ToolJsonSchema,
	ToolObjectSchema,
	ToolResult,
} from '../tools/tool-types.js'
import { BACKGROUND_SERVER_HINT, type McpSandboxFacts } from './sandbox-facts.js'
import type { McpCheckpointStore, McpSandboxes, RegisteredSandbox } from './sandbox-registry.js'

/** The most sandboxes one `sandbox_fork` makes. */
const MAX_FORKS = 10

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

const CHECKPOINT_ID_SCHEMA = {
	type: 'string',
	minLength: 1,
	maxLength: 128,
	description: 'The checkpoint_id sandbox_checkpoint answered (sandbox_checkpoints lists them).',
} as const satisfies ToolJsonSchema

/** A checkpoint as the tools answer it. */
function describeCheckpoint(checkpoint: SandboxCheckpoint): Record<string, unknown> {
	return {
		checkpoint_id: checkpoint.id,
		kind: checkpoint.kind,
		sandbox_id: checkpoint.sandboxId,
		bytes: checkpoint.bytes,
		created_at: new Date(checkpoint.createdAt).toISOString(),
		...(checkpoint.label === undefined ? {} : { label: checkpoint.label }),
	}
}

function checkpointLine(checkpoint: SandboxCheckpoint): string {
	const label = checkpoint.label === undefined ? '' : `\t${checkpoint.label}`
	return `${checkpoint.id}\tof ${checkpoint.sandboxId}\t${checkpoint.bytes} bytes${label}`
}

function annotations(
	title: string,
	hints: { readOnly: boolean; destructive: boolean; idempotent: boolean },
): ToolAnnotations {
	return {
		title,
		readOnlyHint: hints.readOnly,
		destructiveHint: hints.destructive,
		idempotentHint: hints.idempotent,
		openWorldHint: false,
	}
}

function objectSchema(
	properties: Record<string, ToolJsonSchema>,
	required: readonly string[],
): ToolObjectSchema {
	return { type: 'object', properties, required: [...required], additionalProperties: false }
}

/** The sandbox's checkpoint verbs, or the refusal a provider without them would give. */
function checkpointVerbs(sandbox: Sandbox): Required<Pick<Sandbox, 'checkpoint' | 'rollback'>> {
	const { checkpoint, rollback } = sandbox
	if (!checkpoint || !rollback) throw new CheckpointUnsupportedError('checkpoint', 'filesystem', [])
	return {
		checkpoint: (options) => checkpoint.call(sandbox, options),
		rollback: (target, options) => rollback.call(sandbox, target, options),
	}
}

// long: a table of the sandbox-side checkpoint tools (schema, description, handler each)
function sandboxCheckpointTools(registry: McpSandboxes): McpTool[] {
	const checkpointSchema = objectSchema(
		{
			sandbox_id: SANDBOX_ID_SCHEMA,
			label: {
				type: 'string',
				maxLength: 256,
				description: 'A note of your choosing kept with the checkpoint (default none).',
			},
		},
		['sandbox_id'],
	)
	const rollbackSchema = objectSchema(
		{ sandbox_id: SANDBOX_ID_SCHEMA, checkpoint_id: CHECKPOINT_ID_SCHEMA },
		['sandbox_id', 'checkpoint_id'],
	)
	return [
		{
			name: 'sandbox_checkpoint',
			description:
				"Save the sandbox's workspace files as a checkpoint (a filesystem checkpoint: files only, not running processes; the sandbox is paused for the instant of the copy). Answers its checkpoint_id, which sandbox_rollback and sandbox_fork take, its size in bytes and when it was taken. Checkpoints outlive the sandbox; sandbox_checkpoint_delete removes one.",
			inputSchema: checkpointSchema,
			annotations: annotations('Checkpoint a sandbox', {
				readOnly: false,
				destructive: false,
				idempotent: false,
			}),
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_checkpoint', checkpointSchema, args)
				const entry = await registry.resolve(
					stringArgument(valid, 'sandbox_id') ?? '',
					context.signal,
				)
				const label = stringArgument(valid, 'label')
				const checkpoint = await checkpointVerbs(entry.target.sandbox).checkpoint({
					...(label === undefined ? {} : { label }),
					signal: context.signal,
				})
				return {
					text: `checkpoint ${checkpoint.id} of sandbox ${checkpoint.sandboxId} (${checkpoint.bytes} bytes)`,
					data: describeCheckpoint(checkpoint),
				}
			},
		},
		{
			name: 'sandbox_rollback',
			description:
				"Make the sandbox's workspace what it was at a checkpoint. Every running process in the sandbox is ended first — commands, terminal sessions and detached commands (exec_start) — then the workspace files are replaced by the checkpoint's; the sandbox itself (its sandbox_id, network, limits) stays. The checkpoint is kept, so rolling back to it again works.",
			inputSchema: rollbackSchema,
			annotations: annotations('Roll a sandbox back', {
				readOnly: false,
				destructive: true,
				idempotent: false,
			}),
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_rollback', rollbackSchema, args)
				const sandboxId = stringArgument(valid, 'sandbox_id') ?? ''
				const checkpointId = stringArgument(valid, 'checkpoint_id') ?? ''
				const entry = await registry.resolve(sandboxId, context.signal)
				await checkpointVerbs(entry.target.sandbox).rollback(checkpointId, {
					signal: context.signal,
				})
				return {
					text: `sandbox ${sandboxId} rolled back to checkpoint ${checkpointId}; its processes were ended`,
					data: { sandbox_id: sandboxId, checkpoint_id: checkpointId, rolled_back: true },
				}
			},
		},
	]
}

// long: a table of the provider-side checkpoint tools (schema, description, handler each)
function storeCheckpointTools(registry: McpSandboxes, store: McpCheckpointStore): McpTool[] {
	const forkSchema = objectSchema(
		{
			checkpoint_id: CHECKPOINT_ID_SCHEMA,
			count: {
				type: 'integer',
				minimum: 1,
				maximum: MAX_FORKS,
				description: `How many new sandboxes to make from the checkpoint, 1 to ${MAX_FORKS} (default 1).`,
			},
		},
		['checkpoint_id'],
	)
	const deleteSchema = objectSchema({ checkpoint_id: CHECKPOINT_ID_SCHEMA }, ['checkpoint_id'])
	const listSchema = objectSchema({}, [])
	return [
		{
			name: 'sandbox_fork',
			description: `Make new sandboxes from a checkpoint: each starts with the checkpoint's workspace files and nothing written since, and none shares a writable file with the others or the original. Answers their sandbox_ids (each like sandbox_create's: every tool takes it, sandbox_destroy ends it, and it ends with this server). count is 1 to ${MAX_FORKS}, default 1. An unknown checkpoint_id creates nothing.`,
			inputSchema: forkSchema,
			annotations: annotations('Fork sandboxes from a checkpoint', {
				readOnly: false,
				destructive: false,
				idempotent: false,
			}),
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_fork', forkSchema, args)
				const checkpointId = stringArgument(valid, 'checkpoint_id') ?? ''
				const count = integerArgument(valid, 'count', 1)
				const forks = await registry.fork(checkpointId, count, context.signal)
				const ids = forks.map((entry) => entry.target.sandbox.id)
				return {
					text: `${ids.length} sandbox(es) forked from checkpoint ${checkpointId}:\n${ids.join('\n')}`,
					data: { checkpoint_id: checkpointId, sandboxes: forks.map(describe) },
				}
			},
		},
		{
			name: 'sandbox_checkpoints',
			description:
				'List the checkpoints this server keeps, oldest first: checkpoint_id, the sandbox it was taken of, size in bytes, when, label.',
			inputSchema: listSchema,
			annotations: annotations('List checkpoints', {
				readOnly: true,
				destructive: false,
				idempotent: true,
			}),
			call: async (args, context) => {
				validateToolArguments('sandbox_checkpoints', listSchema, args)
				const checkpoints = await store.list(context.signal)
				return {
					text:
						checkpoints.length === 0
							? '(no checkpoints)'
							: checkpoints.map(checkpointLine).join('\n'),
					data: { checkpoints: checkpoints.map(describeCheckpoint) },
				}
			},
		},
		{
			name: 'sandbox_checkpoint_delete',
			description:
				'Delete a checkpoint and the files it keeps. Sandboxes forked from it are not affected. An unknown checkpoint_id is an error (CheckpointNotFoundError).',
			inputSchema: deleteSchema,
			annotations: annotations('Delete a checkpoint', {
				readOnly: false,
				destructive: true,
				idempotent: false,
			}),
			call: async (args, context) => {
				const valid = validateToolArguments('sandbox_checkpoint_delete', deleteSchema, args)
				const checkpointId = stringArgument(valid, 'checkpoint_id') ?? ''
				await store.delete(checkpointId, context.signal)
				return {
					text: `checkpoint ${checkpointId} deleted`,
					data: { checkpoint_id: checkpointId, deleted: true },
				}
			},
		},
	]
}

/**
 * The checkpoint tools, listed only when the server's provider takes filesystem checkpoints
 * (local, and container under runc/crun); elsewhere they are not listed at all.
 */
function checkpointTools(registry: McpSandboxes): McpTool[] {
	const store = registry.checkpoints
	if (store === undefined) return []
	return [...sandboxCheckpointTools(registry), ...storeCheckpointTools(registry, store)]
}

/** Every tool the server lists, lifecycle first. */
export function mcpToolCatalog(registry: McpSandboxes): McpTool[] {
	return [
		...lifecycleTools(registry),
		...checkpointTools(registry),
		...SANDBOX_TOOL_DEFINITIONS.map((definition) => sandboxTool(definition, registry)),
	]
}
