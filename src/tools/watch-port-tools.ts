/**
 * `watch`: changes under a path, polled with a cursor (each call answers what changed since the
 * cursor it was given and the cursor to pass next; the host keeps the watch live between calls,
 * `watch-state.ts`). `expose_port`: a server inside the sandbox as a URL on the host, for the
 * user (the sandbox's own loopback is what the model reaches from inside).
 */
import type { Sandbox, SandboxWatchEvent } from '../contract-entry.js'
import { defineTool } from './define-tool.js'
import { booleanArgument, integerArgument, stringArgument } from './tool-arguments.js'
import { ToolUnsupportedError } from './tool-errors.js'
import { PATH_SCHEMA, READ_ONLY_ANNOTATIONS } from './tool-schema-parts.js'
import type { ToolResult } from './tool-types.js'
import type { ToolWatch } from './watch-state.js'
import { workspacePath } from './workspace-paths.js'

/** Changes one `watch` call answers when it gives no `max_events`. */
export const DEFAULT_WATCH_MAX_EVENTS = 100
/** How long one `watch` call waits for a first change when it gives no `wait_ms`. */
export const DEFAULT_WATCH_WAIT_MS = 1000
export const MAX_WATCH_WAIT_MS = 30_000

function eventData(root: string, event: SandboxWatchEvent) {
	if (event.type === 'overflow') return { type: 'overflow', at: event.at }
	return {
		type: event.type,
		path: workspacePath(root, event.path),
		...(event.fromPath === undefined ? {} : { from_path: workspacePath(root, event.fromPath) }),
		at: event.at,
	}
}

/** `<watch id>:<seq>` → the watch and the sequence number; undefined when it is not one. */
function parseCursor(cursor: string): { id: string; seq: number } | undefined {
	const match = /^([0-9a-f]{12}):(\d{1,15})$/.exec(cursor)
	return match?.[1] && match[2] ? { id: match[1], seq: Number(match[2]) } : undefined
}

export const WATCH_TOOL = defineTool({
	name: 'watch',
	description:
		'Changes (create, modify, delete, rename) under a path, by polling: the first call (no cursor) starts watching from now and answers a cursor; each later call with that cursor answers the changes since it and the next cursor. Waits up to wait_ms for a first change. lost: true means some changes were dropped (too many between polls, or the watch had ended); list the directory again then.',
	inputSchema: {
		type: 'object',
		properties: {
			path: {
				...PATH_SCHEMA,
				description: 'File or directory to watch (default: the workspace root).',
			},
			recursive: {
				type: 'boolean',
				description: 'Changes anywhere below the path, not only directly in it (default false).',
			},
			cursor: {
				type: 'string',
				minLength: 1,
				maxLength: 64,
				description: 'The cursor the previous watch call answered; omit to start.',
			},
			wait_ms: {
				type: 'integer',
				minimum: 0,
				maximum: MAX_WATCH_WAIT_MS,
				description: `Milliseconds to wait for a first change when none is pending (default ${DEFAULT_WATCH_WAIT_MS}; 0 answers at once).`,
			},
			max_events: {
				type: 'integer',
				minimum: 1,
				maximum: 1000,
				description: `Most changes answered (default ${DEFAULT_WATCH_MAX_EVENTS}); the rest come with the next cursor.`,
			},
		},
		additionalProperties: false,
	},
	annotations: { title: 'Watch for changes', ...READ_ONLY_ANNOTATIONS },
	// long: resolving the cursor to a live watch (or a new one), then the wait and the answer
	handler: async ({ sandbox, background }, args, context): Promise<ToolResult> => {
		if (!sandbox.watch) throw new ToolUnsupportedError('watch', 'watch()')
		const watchable = sandbox as Sandbox & Required<Pick<Sandbox, 'watch'>>
		const path = stringArgument(args, 'path') ?? '.'
		const recursive = booleanArgument(args, 'recursive', false)
		const given = stringArgument(args, 'cursor')
		const parsed = given === undefined ? undefined : parseCursor(given)
		let watch: ToolWatch | undefined = parsed ? background.watches.find(parsed.id) : undefined
		// A cursor of a watch that ended (idle, or this server restarted): start again, say so.
		const restarted = given !== undefined && (watch === undefined || watch.ended !== undefined)
		if (watch === undefined || watch.ended !== undefined)
			watch = background.watches.open(watchable, path, recursive)
		watch.touch()
		const after = restarted || parsed === undefined ? watch.lastSeq : parsed.seq
		const max = integerArgument(args, 'max_events', DEFAULT_WATCH_MAX_EVENTS)
		let batch = watch.since(after, max)
		if (batch.events.length === 0 && given !== undefined) {
			await watch.waitForChange(
				integerArgument(args, 'wait_ms', DEFAULT_WATCH_WAIT_MS),
				context.signal,
			)
			batch = watch.since(after, max)
		}
		const events = batch.events.map((event) => eventData(sandbox.rootDir, event))
		const lost = restarted || batch.lost || batch.events.some((event) => event.type === 'overflow')
		const cursor = `${watch.id}:${batch.lastSeq}`
		const shown = workspacePath(sandbox.rootDir, watch.path)
		const lines = events.map((event) =>
			'path' in event
				? `${event.type} ${event.from_path === undefined ? '' : `${event.from_path} -> `}${event.path}`
				: 'overflow: changes were lost',
		)
		if (lost) lines.unshift('lost: some changes were not kept; list the directory again')
		if (watch.ended !== undefined && watch.ended !== 'closed')
			lines.push(`the watch ended: ${watch.ended}`)
		return {
			text: `${lines.length === 0 ? `no changes under ${shown}` : lines.join('\n')}\ncursor: ${cursor}`,
			data: {
				path: shown,
				events,
				cursor,
				lost,
				...(watch.ended === undefined ? {} : { ended: watch.ended }),
			},
		}
	},
})

export const EXPOSE_PORT_TOOL = defineTool({
	name: 'expose_port',
	description:
		"Serve a port the sandbox listens on (its own 127.0.0.1) as a URL on the host, for the user to open: answers the url, a token every request needs (?token=, header x-namzu-token, or Authorization: Bearer) and preview_url with the token in it. Start the server first (in the background). The URL is on the host's loopback: you cannot fetch it from inside the sandbox; there use http://127.0.0.1:PORT. Asking again for the same port answers the same URL.",
	inputSchema: {
		type: 'object',
		properties: {
			port: {
				type: 'integer',
				minimum: 1,
				maximum: 65_535,
				description:
					'The TCP port the server listens on inside the sandbox (on 127.0.0.1 or 0.0.0.0).',
			},
		},
		required: ['port'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Expose a port',
		readOnlyHint: false,
		destructiveHint: false,
		idempotentHint: true,
		openWorldHint: false,
	},
	handler: async ({ sandbox, background }, args, context) => {
		if (!sandbox.exposePort) throw new ToolUnsupportedError('expose_port', 'exposePort()')
		const exposePort = sandbox.exposePort.bind(sandbox)
		const port = integerArgument(args, 'port', 0)
		let pending = background.exposures.get(port)
		if (pending === undefined) {
			pending = exposePort(port, context.signal ? { signal: context.signal } : {})
			background.exposures.set(port, pending)
			// A refused or ended exposure is forgotten, so asking again tries afresh.
			const forget = () => {
				if (background.exposures.get(port) === pending) background.exposures.delete(port)
			}
			pending.then((exposed) => exposed.closed.then(forget), forget)
		}
		const exposed = await pending
		const token = exposed.token
		const preview =
			token === undefined ? `${exposed.url}/` : `${exposed.url}/?token=${encodeURIComponent(token)}`
		return {
			text: `port ${port} is served at ${preview} (for the user on the host; inside the sandbox use http://127.0.0.1:${port})`,
			data: { port, url: exposed.url, host_port: exposed.hostPort, token, preview_url: preview },
		}
	},
})

export const WATCH_PORT_TOOLS = [WATCH_TOOL, EXPOSE_PORT_TOOL]
