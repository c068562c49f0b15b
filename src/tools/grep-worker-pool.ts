/**
 * Where `grep`'s regular expressions run: worker threads, never the caller's event loop, so a
 * pattern that backtracks without end stalls one worker and nothing else (an MCP server keeps
 * answering every other request). At most `GREP_WORKER_CONCURRENCY` run at once, process-wide; a
 * call past that waits its turn (its budget starts when its worker does). A match past its budget
 * ends by terminating the worker — V8 cannot interrupt a regular expression any other way — and a
 * fresh one replaces it for the next call. Idle workers are kept (unreferenced) for reuse.
 */
import { Worker } from 'node:worker_threads'

/** Matches that run at once in this process; more wait their turn. */
export const GREP_WORKER_CONCURRENCY = 2

/** A worker's heap: a searched file is at most 16 MiB (`max_file_bytes`' ceiling). */
const WORKER_HEAP_MB = 256

/**
 * The worker: compiles the pattern, tests each line, answers the indexes of the first `limit`
 * matching lines. Plain JavaScript, evaluated by `Worker`, so it runs the same from source and
 * from the built package.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
parentPort.on('message', ({ source, flags, text, limit }) => {
	const pattern = new RegExp(source, flags)
	const found = []
	const lines = text.split('\\n')
	for (let i = 0; i < lines.length && found.length < limit; i++) {
		if (pattern.test(lines[i])) found.push(i)
	}
	parentPort.postMessage(found)
})
`

/** One match to run: the pattern's source and flags, the text, how many lines at most. */
export interface GrepTask {
	readonly source: string
	readonly flags: string
	readonly text: string
	readonly limit: number
}

/** How a task ended: the matching line indexes, or past its budget, or aborted. */
export type GrepTaskOutcome =
	| { readonly kind: 'matched'; readonly indexes: readonly number[] }
	| { readonly kind: 'timed-out' }
	| { readonly kind: 'aborted'; readonly reason: unknown }

/** Workers and the queue of tasks waiting for one; see the module comment. */
export class GrepWorkerPool {
	readonly #concurrency: number
	readonly #idle: Worker[] = []
	#running = 0
	readonly #waiting: Array<() => void> = []

	constructor(concurrency = GREP_WORKER_CONCURRENCY) {
		this.#concurrency = concurrency
	}

	/** Tasks running right now (at most the concurrency). */
	get running(): number {
		return this.#running
	}

	/** Runs `task` within `budgetMs` of the worker's time (waiting for a turn is not counted). */
	async run(task: GrepTask, budgetMs: number, signal?: AbortSignal): Promise<GrepTaskOutcome> {
		signal?.throwIfAborted()
		await this.#turn(signal)
		let worker: Worker | undefined
		try {
			worker = this.#idle.pop() ?? this.#spawn()
			const outcome = await runOn(worker, task, budgetMs, signal)
			if (outcome.kind === 'matched') {
				worker.unref()
				this.#idle.push(worker)
			} else await worker.terminate()
			return outcome
		} catch (error) {
			await worker?.terminate()
			throw error
		} finally {
			this.#running--
			this.#waiting.shift()?.()
		}
	}

	/** Terminates the idle workers (a running one ends with its task). */
	async close(): Promise<void> {
		await Promise.all(this.#idle.splice(0).map((worker) => worker.terminate()))
	}

	#spawn(): Worker {
		return new Worker(WORKER_SOURCE, {
			eval: true,
			resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
		})
	}

	/** Resolves once this call may run (counted as running from then on). */
	#turn(signal: AbortSignal | undefined): Promise<void> {
		if (this.#running < this.#concurrency) {
			this.#running++
			return Promise.resolve()
		}
		return new Promise((resolve, reject) => {
			const start = () => {
				signal?.removeEventListener('abort', onAbort)
				this.#running++
				resolve()
			}
			const onAbort = () => {
				const at = this.#waiting.indexOf(start)
				if (at !== -1) this.#waiting.splice(at, 1)
				reject(signal?.reason)
			}
			this.#waiting.push(start)
			signal?.addEventListener('abort', onAbort, { once: true })
		})
	}
}

/** One task on one worker: its answer, its budget, the caller's abort, whichever comes first. */
function runOn(
	worker: Worker,
	task: GrepTask,
	budgetMs: number,
	signal: AbortSignal | undefined,
): Promise<GrepTaskOutcome> {
	if (signal?.aborted) return Promise.resolve({ kind: 'aborted', reason: signal.reason })
	worker.ref()
	return new Promise((resolve, reject) => {
		const settle = (finish: () => void) => {
			clearTimeout(timer)
			signal?.removeEventListener('abort', onAbort)
			worker.off('message', onMessage)
			worker.off('error', onError)
			worker.off('exit', onExit)
			finish()
		}
		const onMessage = (indexes: unknown) =>
			settle(() =>
				resolve({
					kind: 'matched',
					indexes: Array.isArray(indexes)
						? indexes.filter((index): index is number => typeof index === 'number')
						: [],
				}),
			)
		const onError = (error: Error) => settle(() => reject(error))
		const onExit = (code: number) =>
			settle(() => reject(new Error(`grep worker exited (code ${code}) before answering`)))
		const onAbort = () => settle(() => resolve({ kind: 'aborted', reason: signal?.reason }))
		const timer = setTimeout(
			() => settle(() => resolve({ kind: 'timed-out' })),
			Math.max(1, budgetMs),
		)
		worker.on('message', onMessage)
		worker.once('error', onError)
		worker.once('exit', onExit)
		signal?.addEventListener('abort', onAbort, { once: true })
		worker.postMessage(task)
	})
}

/** The pool every `grep` of this process shares. */
export const GREP_WORKERS = new GrepWorkerPool()
