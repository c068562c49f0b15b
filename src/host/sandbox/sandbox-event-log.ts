/**
 * The lifecycle event stream of one `AgentSandbox` (contract/sandbox-events.ts): a ring of the last
 * `SANDBOX_EVENT_RETENTION` events, each numbered, and any number of readers that replay from a
 * cursor and then follow. A reader holds no queue of its own (it reads the ring after its last
 * event), so a slow reader costs nothing but the ring; one that fell a whole ring behind gets an
 * `overflow`. The log ends after `destroyed` or `guest-died`: readers finish once they read it.
 */
import { randomBytes } from 'node:crypto'
import {
	callSite,
	optionalBoolean,
	optionalObject,
	optionalSignal,
	optionalString,
} from '../../contract/argument-validators.js'
import {
	SANDBOX_EVENT_RETENTION,
	type SandboxEgressDecisionEvent,
	type SandboxEventsOptions,
	type SandboxLifecycleEvent,
} from '../../contract/sandbox-events.js'

import type { GuestExit } from '../transport/transport-errors.js'

type Stored = SandboxLifecycleEvent & { readonly seq: number }

/** An event as recorded: the log stamps `at` and `cursor`. */
export type SandboxEventInput = SandboxLifecycleEvent extends infer E
	? E extends SandboxLifecycleEvent
		? Omit<E, 'at' | 'cursor'>
		: never
	: never

export class SandboxEventLog {
	readonly #id = randomBytes(6).toString('hex')
	readonly #ring: Stored[] = []
	#nextSeq = 1
	#ended = false
	readonly #waiters = new Set<() => void>()

	get ended(): boolean {
		return this.#ended
	}

	/** Appends one event; `final` ends the log (nothing is recorded after it). */
	record(event: SandboxEventInput, final = false): void {
		if (this.#ended) return
		const seq = this.#nextSeq
		this.#nextSeq += 1
		const stored = { ...event, at: Date.now(), cursor: this.#cursorOf(seq), seq } as Stored
		this.#ring.push(stored)
		if (this.#ring.length > SANDBOX_EVENT_RETENTION) this.#ring.shift()
		if (final) this.#ended = true
		for (const wake of [...this.#waiters]) wake()
	}

	#cursorOf(seq: number): string {
		return `${this.#id}.${seq}`
	}

	/** Where a reader starts (the seq it has seen) and whether it lost events before that. */
	#start(options: SandboxEventsOptions): { seq: number; lost: boolean } {
		const first = this.#ring[0]?.seq ?? this.#nextSeq
		if (options.cursor === undefined) {
			return { seq: options.replay === true ? first - 1 : this.#nextSeq - 1, lost: false }
		}
		const [id, text] = options.cursor.split('.')
		const seq = Number(text)
		if (id !== this.#id || !Number.isSafeInteger(seq) || seq < 0 || seq >= this.#nextSeq) {
			return { seq: first - 1, lost: true }
		}
		return { seq, lost: seq < first - 1 }
	}

	/** Checks the options (`SandboxArgumentError`) before anything is iterated. */
	static check(options: unknown): AbortSignal | undefined {
		const site = callSite('events')
		const given = optionalObject(site, 'options', options)
		optionalString(site, 'options.cursor', given.cursor)
		optionalBoolean(site, 'options.replay', given.replay)
		return optionalSignal(site, 'options.signal', given.signal)
	}

	/**
	 * `Sandbox.events` over this log: the options checked, then `admit` asked unless the log has
	 * already ended (an ended stream is still read back by cursor).
	 */
	events(options: SandboxEventsOptions, admit: () => void): AsyncIterable<SandboxLifecycleEvent> {
		const signal = SandboxEventLog.check(options)
		if (!this.#ended) admit()
		return this.read({ ...options, ...(signal ? { signal } : {}) })
	}

	async *read(
		options: SandboxEventsOptions,
	): AsyncGenerator<SandboxLifecycleEvent, void, undefined> {
		const signal = options.signal
		let { seq, lost } = this.#start(options)
		if (lost) {
			const first = this.#ring[0]?.seq ?? this.#nextSeq
			yield { type: 'overflow', at: Date.now(), cursor: this.#cursorOf(first - 1) }
		}
		for (;;) {
			// An abort ends the iteration quietly: the caller asked for it to stop.
			if (signal?.aborted) return
			const first = this.#ring[0]?.seq ?? this.#nextSeq
			if (seq < first - 1) {
				seq = first - 1
				yield { type: 'overflow', at: Date.now(), cursor: this.#cursorOf(seq) }
			}
			const next = this.#ring[seq - first + 1]
			if (next !== undefined) {
				seq = next.seq
				const { seq: _seq, ...event } = next
				yield event as SandboxLifecycleEvent
				continue
			}
			if (this.#ended) return
			await this.#wait(signal)
		}
	}

	#wait(signal: AbortSignal | undefined): Promise<void> {
		return new Promise((resolve) => {
			const done = () => {
				this.#waiters.delete(done)
				signal?.removeEventListener('abort', done)
				resolve()
			}
			this.#waiters.add(done)
			signal?.addEventListener('abort', done, { once: true })
		})
	}
}

/**
 * Runs one exec with its `exec-started` and `exec-exited` (and `oom`, when the result says the
 * OOM killer ended it) recorded in `log`.
 */
export async function recordedExec<R extends object>(
	log: SandboxEventLog,
	execId: number,
	command: string,
	args: readonly string[],
	run: () => Promise<R>,
): Promise<R> {
	log.record({ type: 'exec-started', execId, command, args: [...args] })
	let result: R
	try {
		result = await run()
	} catch (error) {
		const name = error instanceof Error ? error.name : 'Error'
		log.record({ type: 'exec-exited', execId, command, error: name })
		throw error
	}
	const ended = result as Partial<Record<string, unknown>>
	const oomKilled = typeof ended.oomKilled === 'boolean' ? ended.oomKilled : undefined
	log.record({
		type: 'exec-exited',
		execId,
		command,
		...(typeof ended.exitCode === 'number' ? { exitCode: ended.exitCode } : {}),
		...(typeof ended.signal === 'string' ? { signal: ended.signal } : {}),
		...(typeof ended.timedOut === 'boolean' ? { timedOut: ended.timedOut } : {}),
		...(ended.aborted === true ? { aborted: true } : {}),
		...(typeof ended.durationMs === 'number' ? { durationMs: ended.durationMs } : {}),
		...(oomKilled === undefined ? {} : { oomKilled }),
	})
	if (oomKilled === true) log.record({ type: 'oom', scope: 'exec', execId })
	return result
}

/** The guest's death (and the OOM killer, when that was it): the log's last events. */
export function recordGuestDeath(log: SandboxEventLog, died: GuestExit): void {
	if (died.oomKilled === true) log.record({ type: 'oom', scope: 'guest' })
	log.record(
		{
			type: 'guest-died',
			exitCode: died.exitCode,
			signal: died.signal,
			...(died.oomKilled === undefined ? {} : { oomKilled: died.oomKilled }),
		},
		true,
	)
}

/**
 * Where a tier's egress decisions come from (the proxy's `EgressDecision` fits): subscribe a
 * listener, get the unsubscribe.
 */
export type EgressDecisionSource = (
	listener: (decision: Omit<SandboxEgressDecisionEvent, 'type' | 'at' | 'cursor'>) => void,
) => () => void

/** One decision of the sandbox's egress proxy, as `onEgressDecision` got it. */
export function recordEgressDecision(
	log: SandboxEventLog,
	decision: Parameters<Parameters<EgressDecisionSource>[0]>[0],
): void {
	const { host, port, verdict, layer, reason } = decision
	log.record({ type: 'egress-decision', host, port, verdict, layer, reason })
}
