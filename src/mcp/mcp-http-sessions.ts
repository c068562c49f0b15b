/**
 * The HTTP transport's sessions, one per client, and who may be evicted to make room. A session
 * is live while it has a request in flight or a stream open (the client's event stream, a tool
 * call being answered) or was used within the idle window; a live session is never evicted. Past
 * the cap a new client takes the place of the least recently used session that is not live, and
 * is refused when every session is live — so one client opening sessions cannot push out another
 * client that is still there.
 */
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'

/** Sessions held at once. */
export const MAX_MCP_SESSIONS = 64
/** A session unused this long, with nothing in flight, may be evicted for a new client. */
export const MCP_SESSION_IDLE_MS = 10 * 60_000

/** What eviction reads of a session. */
export interface SessionActivity {
	/** Requests and streams of this session not yet answered or closed. */
	readonly inFlight: number
	/** When it last began a request (a monotonic clock's milliseconds). */
	readonly lastUsedMs: number
}

/**
 * The session to evict, or undefined when every one is live: the least recently used with nothing
 * in flight and idle at least `idleMs` at `nowMs` (pure).
 */
export function evictionCandidate<K>(
	sessions: ReadonlyMap<K, SessionActivity>,
	nowMs: number,
	idleMs: number,
): K | undefined {
	let oldest: { readonly key: K; readonly lastUsedMs: number } | undefined
	for (const [key, session] of sessions) {
		if (session.inFlight > 0 || nowMs - session.lastUsedMs < idleMs) continue
		if (oldest === undefined || session.lastUsedMs < oldest.lastUsedMs) {
			oldest = { key, lastUsedMs: session.lastUsedMs }
		}
	}
	return oldest?.key
}

interface Session extends SessionActivity {
	readonly transport: StreamableHTTPServerTransport
	inFlight: number
	lastUsedMs: number
}

/** The open sessions by id, with their activity. */
export class McpHttpSessions {
	readonly #sessions = new Map<string, Session>()
	readonly #now: () => number

	constructor(now: () => number = () => performance.now()) {
		this.#now = now
	}

	get size(): number {
		return this.#sessions.size
	}

	get(id: string): StreamableHTTPServerTransport | undefined {
		return this.#sessions.get(id)?.transport
	}

	add(id: string, transport: StreamableHTTPServerTransport): void {
		this.#sessions.set(id, { transport, inFlight: 0, lastUsedMs: this.#now() })
	}

	delete(id: string): void {
		this.#sessions.delete(id)
	}

	/** A request of `id` began; the returned function ends it (once). */
	begin(id: string): () => void {
		const session = this.#sessions.get(id)
		if (!session) return () => {}
		session.inFlight++
		session.lastUsedMs = this.#now()
		let ended = false
		return () => {
			if (ended) return
			ended = true
			session.inFlight--
		}
	}

	/** The session a new client may replace, per `evictionCandidate`. */
	evictable(idleMs: number): StreamableHTTPServerTransport | undefined {
		const id = evictionCandidate(this.#sessions, this.#now(), idleMs)
		return id === undefined ? undefined : this.#sessions.get(id)?.transport
	}

	/** Every transport, and forgets them (server shutdown). */
	drain(): StreamableHTTPServerTransport[] {
		const all = [...this.#sessions.values()].map((session) => session.transport)
		this.#sessions.clear()
		return all
	}
}
