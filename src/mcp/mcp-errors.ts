/**
 * What the MCP server refuses on its own. A tool call's failure reaches the client as a tool
 * error carrying the error's `name` and `reason` (`toolErrorReport`); these two are raised before
 * or outside any sandbox.
 */
import { SandboxError, type SandboxErrorOptions } from '../contract-entry.js'

/**
 * A tool call named a `sandbox_id` this server neither created nor can reopen, or one this client
 * destroyed (`destroyed`).
 */
export class UnknownSandboxError extends SandboxError<'unknown-sandbox'> {
	override readonly name = 'UnknownSandboxError'
	readonly sandboxId: string
	readonly destroyed: boolean

	constructor(sandboxId: string, options: SandboxErrorOptions & { destroyed?: boolean } = {}) {
		const { destroyed = false, ...rest } = options
		const shown = JSON.stringify(sandboxId.slice(0, 80))
		super(
			destroyed
				? `sandbox ${shown} was destroyed; sandbox_create makes a new one`
				: `no sandbox ${shown}; sandbox_list shows the ones this server holds`,
			'unknown-sandbox',
			rest,
		)
		this.sandboxId = sandboxId
		this.destroyed = destroyed
	}
}

/** `--http` on an address other than loopback without `--allow-remote`, or a weak token. */
export class McpHttpConfigError extends SandboxError<'invalid-mcp-http-config'> {
	override readonly name = 'McpHttpConfigError'
	readonly field: string

	constructor(field: string, message: string) {
		super(`${field}: ${message}`, 'invalid-mcp-http-config')
		this.field = field
	}
}

/** `keep_alive` asked of a tier whose sandboxes cannot outlive the server (Kubernetes, container). */
export class McpKeepAliveUnsupportedError extends SandboxError<'keep-alive-unsupported'> {
	override readonly name = 'McpKeepAliveUnsupportedError'
	readonly tier: string

	constructor(tier: string) {
		super(
			`keep_alive: a ${tier} task sandbox is leased to this server and ends with it; create it without keep_alive`,
			'keep-alive-unsupported',
		)
		this.tier = tier
	}
}

/**
 * A tool call named a sandbox another client of this HTTP server created: each client (MCP
 * session) sees and drives only its own unless the server shares them (`--shared-sandboxes`).
 */
export class ForeignSandboxError extends SandboxError<'foreign-sandbox'> {
	override readonly name = 'ForeignSandboxError'
	readonly sandboxId: string

	constructor(sandboxId: string) {
		super(
			`sandbox ${JSON.stringify(sandboxId.slice(0, 80))} belongs to another client of this server; each client drives only the sandboxes it created (the server shares them with --shared-sandboxes)`,
			'foreign-sandbox',
		)
		this.sandboxId = sandboxId
	}
}
