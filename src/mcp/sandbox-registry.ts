/**
 * The sandboxes an MCP server holds, by id: the ones it created (idempotently by name) and
 * kept-alive ones it reopened for a client that came back with their id. Each is owned by the
 * client that created or reopened it when the server keeps clients apart (HTTP, by default): a
 * client's view (`forClient`) lists, resolves and destroys only its own, names are per client,
 * and another client's id is refused by name (`ForeignSandboxError`). When a client's session
 * ends its sandboxes are destroyed, kept-alive ones aside (those are released: any client may
 * reopen them by id). `close()` destroys what this server created unless it was kept alive.
 */
import type { Sandbox, SandboxCheckpoint, SandboxCheckpointKind } from '../index.js'
import { BackgroundExecState } from '../tools/background-exec-state.js'
import type { ToolTarget } from '../tools/define-tool.js'
import { ForeignSandboxError, UnknownSandboxError } from './mcp-errors.js'
import type { McpSandboxFacts } from './sandbox-facts.js'

/** Destroyed ids remembered, so destroying one again answers "already destroyed". */
const DESTROYED_IDS_KEPT = 4096

/** Where sandboxes come from: a provider, and for a tier with kept-alive sandboxes, `open`. */
export interface McpSandboxSource {
	/** Network, limits and lifetime of every sandbox this source makes. */
	readonly facts: McpSandboxFacts
	create(config: {
		readonly keepAlive?: boolean
		readonly from?: string
		readonly signal?: AbortSignal
	}): Promise<Sandbox>
	/** The provider's checkpoint store; absent when it keeps none (then no checkpoint tool is listed). */
	readonly checkpoints?: McpCheckpointStore
	/** Reopens a kept-alive sandbox by id; rejects when there is none. */
	open?(id: string, options?: { readonly signal?: AbortSignal }): Promise<Sandbox>
	close(): Promise<void>
}

/** A provider's checkpoints as the MCP tools use them (forks go through `create({ from })`). */
export interface McpCheckpointStore {
	readonly kinds: readonly SandboxCheckpointKind[]
	list(signal?: AbortSignal): Promise<SandboxCheckpoint[]>
	delete(id: string, signal?: AbortSignal): Promise<void>
}

export interface RegisteredSandbox {
	readonly target: ToolTarget
	readonly name?: string
	readonly keepAlive: boolean
	/** False for a kept-alive sandbox reopened by id: this server never destroys it on shutdown. */
	readonly created: boolean
	/** The client that owns it; none when clients share every sandbox (or it was released). */
	readonly owner?: string
}

/** What one client's tools see of the registry. */
export interface McpSandboxes {
	create(
		name: string | undefined,
		keepAlive: boolean,
		signal?: AbortSignal,
	): Promise<{ readonly entry: RegisteredSandbox; readonly existed: boolean }>
	resolve(id: string, signal?: AbortSignal): Promise<RegisteredSandbox>
	list(): ReadonlyArray<RegisteredSandbox>
	/** Resolves `false` when this client already destroyed it (idempotent), `true` otherwise. */
	destroy(id: string, signal?: AbortSignal): Promise<boolean>
	/** `count` new sandboxes from one checkpoint, each registered as `create`'s (owned, unnamed). */
	fork(checkpointId: string, count: number, signal?: AbortSignal): Promise<RegisteredSandbox[]>
	readonly checkpoints: McpCheckpointStore | undefined
	readonly facts: McpSandboxFacts
}

function nameKey(owner: string | undefined, name: string): string {
	return `${owner ?? ''}\u0000${name}`
}

export class McpSandboxRegistry {
	readonly #source: McpSandboxSource
	readonly #byId = new Map<string, RegisteredSandbox>()
	readonly #byName = new Map<string, Promise<RegisteredSandbox>>()
	/** Ids destroyed through `destroy`, oldest first, with who destroyed them and when it is done. */
	readonly #destroyed = new Map<
		string,
		{ readonly owner: string | undefined; readonly done: Promise<void> }
	>()

	constructor(source: McpSandboxSource) {
		this.#source = source
	}

	/** The view of `client` (an MCP session id), or of every sandbox when `client` is undefined. */
	forClient(client?: string): McpSandboxes {
		return {
			create: (name, keepAlive, signal) => this.#create(client, name, keepAlive, signal),
			resolve: (id, signal) => this.#resolve(client, id, signal),
			list: () =>
				[...this.#byId.values()].filter((entry) => client === undefined || entry.owner === client),
			destroy: (id, signal) => this.#destroy(client, id, signal),
			fork: (checkpointId, count, signal) => this.#fork(client, checkpointId, count, signal),
			checkpoints: this.#source.checkpoints,
			facts: this.#source.facts,
		}
	}

	/** A new sandbox, or — for a name this client already gave — the one made under it. */
	async #create(
		owner: string | undefined,
		name: string | undefined,
		keepAlive: boolean,
		signal?: AbortSignal,
	): Promise<{ readonly entry: RegisteredSandbox; readonly existed: boolean }> {
		const key = name === undefined ? undefined : nameKey(owner, name)
		const known = key === undefined ? undefined : this.#byName.get(key)
		if (known) return { entry: await known, existed: true }
		const making = this.#make(owner, name, keepAlive, signal)
		if (key !== undefined) {
			this.#byName.set(key, making)
			// A failed create frees the name for the next attempt.
			making.catch(() => this.#byName.delete(key))
		}
		return { entry: await making, existed: false }
	}

	/**
	 * Forks made together: the first is made alone, so an unknown or refused checkpoint fails once
	 * with nothing created; a later failure destroys the forks already made.
	 */
	async #fork(
		owner: string | undefined,
		checkpointId: string,
		count: number,
		signal?: AbortSignal,
	): Promise<RegisteredSandbox[]> {
		const first = await this.#make(owner, undefined, false, signal, checkpointId)
		const rest = await Promise.allSettled(
			Array.from({ length: count - 1 }, () =>
				this.#make(owner, undefined, false, signal, checkpointId),
			),
		)
		const made = [first, ...rest.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))]
		const failed = rest.find((r) => r.status === 'rejected')
		if (failed === undefined) return made
		await Promise.allSettled(
			made.map(async (entry) => {
				this.#forget(entry.target.sandbox.id, entry)
				await entry.target.sandbox.destroy()
			}),
		)
		throw failed.reason
	}

	async #make(
		owner: string | undefined,
		name: string | undefined,
		keepAlive: boolean,
		signal?: AbortSignal,
		from?: string,
	): Promise<RegisteredSandbox> {
		const sandbox = await this.#source.create({
			keepAlive,
			...(from === undefined ? {} : { from }),
			...(signal ? { signal } : {}),
		})
		const entry: RegisteredSandbox = {
			target: { sandbox, background: new BackgroundExecState() },
			...(name === undefined ? {} : { name }),
			keepAlive,
			created: true,
			...(owner === undefined ? {} : { owner }),
		}
		this.#byId.set(sandbox.id, entry)
		return entry
	}

	/**
	 * The sandbox `id` names, if `client` may drive it: another client's is `ForeignSandboxError`,
	 * an unowned one becomes the client's, a kept-alive one not held is reopened (and owned);
	 * `UnknownSandboxError` otherwise.
	 */
	async #resolve(
		client: string | undefined,
		id: string,
		signal?: AbortSignal,
	): Promise<RegisteredSandbox> {
		const known = this.#byId.get(id)
		if (known) return this.#claim(client, id, known)
		if (this.#destroyedBy(client, id)) throw new UnknownSandboxError(id, { destroyed: true })
		const open = this.#source.open
		if (!open) throw new UnknownSandboxError(id)
		let sandbox: Sandbox
		try {
			sandbox = await open.call(this.#source, id, signal ? { signal } : {})
		} catch (error) {
			throw new UnknownSandboxError(id, { cause: error })
		}
		const raced = this.#byId.get(id)
		if (raced) return this.#claim(client, id, raced)
		const entry: RegisteredSandbox = {
			target: { sandbox, background: new BackgroundExecState() },
			keepAlive: true,
			created: false,
			...(client === undefined ? {} : { owner: client }),
		}
		this.#byId.set(id, entry)
		return entry
	}

	#claim(client: string | undefined, id: string, entry: RegisteredSandbox): RegisteredSandbox {
		if (client === undefined || entry.owner === client) return entry
		if (entry.owner !== undefined) throw new ForeignSandboxError(id)
		const claimed = { ...entry, owner: client }
		this.#byId.set(id, claimed)
		return claimed
	}

	/** Whether `client` may be told `id` was destroyed (it did, or it may see every sandbox). */
	#destroyedBy(client: string | undefined, id: string): boolean {
		const gone = this.#destroyed.get(id)
		return gone !== undefined && (client === undefined || gone.owner === client)
	}

	/**
	 * Destroys the sandbox. Idempotent: an id this client destroyed before (or is destroying)
	 * answers `false` once that is done; an id it never held is still `UnknownSandboxError`.
	 */
	async #destroy(client: string | undefined, id: string, signal?: AbortSignal): Promise<boolean> {
		const gone = this.#destroyed.get(id)
		if (gone && this.#destroyedBy(client, id)) {
			await gone.done
			return false
		}
		const entry = await this.#resolve(client, id, signal)
		this.#forget(id, entry)
		const done = (async () => {
			await entry.target.background.close()
			await entry.target.sandbox.destroy(signal ? { signal } : {})
		})()
		this.#destroyed.set(id, { owner: entry.owner, done })
		const oldest = this.#destroyed.keys().next()
		if (this.#destroyed.size > DESTROYED_IDS_KEPT && !oldest.done)
			this.#destroyed.delete(oldest.value)
		try {
			await done
		} catch (error) {
			// Not destroyed after all: the next attempt is a real one, not "already destroyed".
			this.#destroyed.delete(id)
			throw error
		}
		return true
	}

	#forget(id: string, entry: RegisteredSandbox): void {
		this.#byId.delete(id)
		if (entry.name !== undefined) this.#byName.delete(nameKey(entry.owner, entry.name))
	}

	/**
	 * `client`'s session ended: what it created is destroyed unless kept alive; kept-alive ones are
	 * released (unowned, so any client may reopen them by id) and their names forgotten.
	 */
	async releaseClient(client: string): Promise<void> {
		const owned = [...this.#byId.entries()].filter(([, entry]) => entry.owner === client)
		await Promise.allSettled(
			owned.map(async ([id, entry]) => {
				this.#forget(id, entry)
				if (entry.keepAlive) {
					const { owner: _released, name: _name, ...rest } = entry
					this.#byId.set(id, rest)
					return
				}
				await entry.target.background.close()
				await entry.target.sandbox.destroy()
			}),
		)
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
