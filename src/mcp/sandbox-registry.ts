/**
 * The sandboxes an MCP server holds, by id: the ones it created (idempotently by name) and
 * kept-alive ones it reopened for a client that came back with their id. Every client and
 * session of the server shares one registry. `close()` destroys what this server created unless
 * it was kept alive.
 */
import type { Sandbox } from '../index.js'
import { BackgroundExecState } from '../tools/background-exec-state.js'
import type { ToolTarget } from '../tools/define-tool.js'
import { UnknownSandboxError } from './mcp-errors.js'

/** Where sandboxes come from: a provider, and for a tier with kept-alive sandboxes, `open`. */
export interface McpSandboxSource {
	create(config: { readonly keepAlive?: boolean; readonly signal?: AbortSignal }): Promise<Sandbox>
	/** Reopens a kept-alive sandbox by id; rejects when there is none. */
	open?(id: string, options?: { readonly signal?: AbortSignal }): Promise<Sandbox>
	close(): Promise<void>
}

export interface RegisteredSandbox {
	readonly target: ToolTarget
	readonly name?: string
	readonly keepAlive: boolean
	/** False for a kept-alive sandbox reopened by id: this server never destroys it on shutdown. */
	readonly created: boolean
}

export class McpSandboxRegistry {
	readonly #source: McpSandboxSource
	readonly #byId = new Map<string, RegisteredSandbox>()
	readonly #byName = new Map<string, Promise<RegisteredSandbox>>()

	constructor(source: McpSandboxSource) {
		this.#source = source
	}

	/** A new sandbox, or — for a name already given — the one made under it. */
	async create(
		name: string | undefined,
		keepAlive: boolean,
		signal?: AbortSignal,
	): Promise<{ readonly entry: RegisteredSandbox; readonly existed: boolean }> {
		const known = name === undefined ? undefined : this.#byName.get(name)
		if (known) return { entry: await known, existed: true }
		const making = this.#make(name, keepAlive, signal)
		if (name !== undefined) {
			this.#byName.set(name, making)
			// A failed create frees the name for the next attempt.
			making.catch(() => this.#byName.delete(name))
		}
		return { entry: await making, existed: false }
	}

	async #make(
		name: string | undefined,
		keepAlive: boolean,
		signal?: AbortSignal,
	): Promise<RegisteredSandbox> {
		const sandbox = await this.#source.create({ keepAlive, ...(signal ? { signal } : {}) })
		const entry: RegisteredSandbox = {
			target: { sandbox, background: new BackgroundExecState() },
			...(name === undefined ? {} : { name }),
			keepAlive,
			created: true,
		}
		this.#byId.set(sandbox.id, entry)
		return entry
	}

	/** The sandbox `id` names; a kept-alive one is reopened; `UnknownSandboxError` otherwise. */
	async resolve(id: string, signal?: AbortSignal): Promise<RegisteredSandbox> {
		const known = this.#byId.get(id)
		if (known) return known
		const open = this.#source.open
		if (!open) throw new UnknownSandboxError(id)
		let sandbox: Sandbox
		try {
			sandbox = await open.call(this.#source, id, signal ? { signal } : {})
		} catch (error) {
			throw new UnknownSandboxError(id, { cause: error })
		}
		const raced = this.#byId.get(id)
		if (raced) return raced
		const entry: RegisteredSandbox = {
			target: { sandbox, background: new BackgroundExecState() },
			keepAlive: true,
			created: false,
		}
		this.#byId.set(id, entry)
		return entry
	}

	list(): ReadonlyArray<RegisteredSandbox> {
		return [...this.#byId.values()]
	}

	/** Destroys the sandbox (idempotent: an id destroyed before answers as unknown). */
	async destroy(id: string, signal?: AbortSignal): Promise<void> {
		const entry = await this.resolve(id, signal)
		this.#forget(id, entry)
		await entry.target.background.close()
		await entry.target.sandbox.destroy(signal ? { signal } : {})
	}

	#forget(id: string, entry: RegisteredSandbox): void {
		this.#byId.delete(id)
		if (entry.name !== undefined) this.#byName.delete(entry.name)
	}

	/** Shutdown: what this server created is destroyed unless kept alive; the rest is left running. */
	async close(): Promise<void> {
		const entries = [...this.#byId.entries()]
		this.#byId.clear()
		this.#byName.clear()
		await Promise.allSettled(
			entries.map(async ([, entry]) => {
				await entry.target.background.close()
				if (entry.created && !entry.keepAlive) await entry.target.sandbox.destroy()
			}),
		)
		await this.#source.close()
	}
}
