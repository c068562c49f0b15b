/**
 * `walkFiles` for any sandbox that can `exec` node: a bounded, lazy glob walk that runs INSIDE the
 * guest (so it sees exactly the guest's filesystem and never follows a link out of it) and streams
 * JSON-lines results back through `onOutput`. The host plans and validates; the guest only walks.
 */
import { FileWalkLimitError } from '../../contract/errors.js'
import type {
	SandboxExecOptions,
	SandboxExecResult,
	SandboxFileEntry,
	SandboxWalkFilesOptions,
} from '../../contract/sandbox.js'
import { FileWalkExecError, FileWalkProtocolError, FileWalkRootError } from './walk-errors.js'
import { WalkOutputParser, type WalkRecord } from './walk-output-parser.js'
import { planFileWalk } from './walk-plan.js'
import { WALK_LIMIT_CODE, WALK_PROGRAM_SOURCE, WALK_ROOT_SYMLINK_CODE } from './walk-program.js'

/** The one capability the walk needs: a sandbox's `exec`. */
export type SandboxFileWalkExec = (
	command: string,
	args?: readonly string[],
	options?: SandboxExecOptions,
) => Promise<SandboxExecResult>

type Settled =
	| { readonly ok: true; readonly result: SandboxExecResult }
	| { readonly ok: false; readonly error: unknown }

function abortReason(signal: AbortSignal): unknown {
	return signal.reason ?? new DOMException('The walk was aborted', 'AbortError')
}

function isAbortError(error: unknown, reason: unknown): boolean {
	return error === reason || (error instanceof Error && error.name === 'AbortError')
}

function guestFailure(record: Extract<WalkRecord, { type: 'error' }>, root: string, limit: number) {
	if (record.code === WALK_LIMIT_CODE) return new FileWalkLimitError(limit)
	if (record.code === WALK_ROOT_SYMLINK_CODE) return new FileWalkRootError(root, 'root-is-symlink')
	// The guest's message may name paths; it stays out of our message and only the code is kept.
	return new FileWalkExecError(
		'guest-error',
		'the guest walk program reported an error',
		record.code === undefined ? {} : { guestCode: record.code },
	)
}

/** Post-mortem of a settled walk exec, once every streamed record has been handled. */
function checkResult(result: SandboxExecResult, sawEnd: boolean): void {
	if (result.timedOut) throw new FileWalkExecError('timed-out', 'the walk timed out')
	if (result.stdoutTruncated) {
		throw new FileWalkProtocolError('output-truncated', 'the exec clipped the walk output')
	}
	if (result.exitCode !== 0) {
		throw new FileWalkExecError('exit-code', `the walk exited with code ${result.exitCode}`, {
			exitCode: result.exitCode,
		})
	}
	if (!sawEnd)
		throw new FileWalkProtocolError('missing-done', 'the walk ended without a final record')
}

/** One walk exec's state: the records streamed so far, how the exec settled, and the wake-up. */
class WalkRun {
	readonly parser: WalkOutputParser
	readonly queue: WalkRecord[] = []
	readonly controller = new AbortController()
	protocolFailure: unknown
	settled: Settled | undefined
	#streamedChars = 0
	#wake: (() => void) | undefined
	#finished: Promise<void> = Promise.resolve()

	constructor(plan: ReturnType<typeof planFileWalk>) {
		this.parser = new WalkOutputParser(plan.root, plan.maxEntries)
	}

	/** Wakes the walk loop: a record, the exec's end or an abort arrived. */
	notify(): void {
		const resolve = this.#wake
		this.#wake = undefined
		resolve?.()
	}

	/** Resolves at the next `notify()`. */
	news(): Promise<void> {
		return new Promise<void>((resolve) => {
			this.#wake = resolve
		})
	}

	/** Read through a method: `settled` is written by callbacks, which narrowing cannot see. */
	outcome(): Settled | undefined {
		return this.settled
	}

	start(exec: SandboxFileWalkExec, plan: ReturnType<typeof planFileWalk>): void {
		const onOutput: SandboxExecOptions['onOutput'] = (chunk) => {
			if (chunk.stream !== 'stdout') return
			this.#streamedChars += chunk.data.length
			this.feed(chunk.data)
			this.notify()
		}
		this.#finished = new Promise<SandboxExecResult>((resolve) =>
			resolve(
				exec('node', ['-e', WALK_PROGRAM_SOURCE, JSON.stringify(plan)], {
					signal: this.controller.signal,
					onOutput,
				}),
			),
		).then(
			(result) => {
				this.settled = { ok: true, result }
			},
			(error: unknown) => {
				this.settled = { ok: false, error }
			},
		)
		void this.#finished.finally(() => this.notify())
	}

	feed(text: string): void {
		if (this.protocolFailure !== undefined) return
		try {
			this.queue.push(...this.parser.push(text))
		} catch (error) {
			this.protocolFailure = error
			this.controller.abort(error)
		}
	}

	/** An exec that did not stream (or streamed only part) still carries the full stdout. */
	finalise(result: SandboxExecResult): void {
		const rest = result.stdout.slice(this.#streamedChars)
		if (rest !== '') this.feed(rest)
		if (this.protocolFailure === undefined) {
			try {
				this.parser.finish()
			} catch (error) {
				this.protocolFailure = error
			}
		}
	}

	/**
	 * The walk left before its exec settled: aborts it and waits for it to end. A rejection other
	 * than that abort is thrown: a cancellation the backend could not confirm must reach the caller
	 * (it retires the sandbox), even over an early return.
	 */
	async closeEarly(): Promise<void> {
		if (this.outcome() !== undefined) return
		const reason = new DOMException('The walk iterator was closed', 'AbortError')
		if (!this.controller.signal.aborted) this.controller.abort(reason)
		await this.#finished
		const final = this.outcome()
		const cancelFailed =
			final !== undefined &&
			!final.ok &&
			!isAbortError(final.error, reason) &&
			!isAbortError(final.error, this.controller.signal.reason)
		if (cancelFailed) throw final.error
	}
}

/**
 * Walks `rootPath` inside the guest through `exec`, yielding regular files that match
 * `options.pattern` (default `**\/*`). Lazy: entries are yielded as the guest reports them. Bounded
 * by `maxEntries` (results), `maxDepth` and `maxVisitedEntries` (examined entries; exhausting it
 * throws `FileWalkLimitError`, never a short list that looks complete). Aborting `options.signal`
 * or leaving the loop early aborts the guest's walk process and waits for it to end; a rejection
 * from that cancelled exec (other than the abort itself) is re-thrown so the backend can react.
 */
export async function* walkFilesViaExec(
	exec: SandboxFileWalkExec,
	rootPath: string,
	options: SandboxWalkFilesOptions,
): AsyncGenerator<SandboxFileEntry> {
	const plan = planFileWalk(rootPath, options)
	const callerSignal = options.signal
	callerSignal?.throwIfAborted()

	const run = new WalkRun(plan)
	const forwardAbort = () => {
		run.controller.abort(callerSignal === undefined ? undefined : abortReason(callerSignal))
		run.notify()
	}
	callerSignal?.addEventListener('abort', forwardAbort, { once: true })
	run.start(exec, plan)

	let finalised = false
	try {
		for (;;) {
			if (callerSignal?.aborted) throw abortReason(callerSignal)
			if (run.protocolFailure !== undefined) throw run.protocolFailure
			const record = run.queue.shift()
			if (record !== undefined) {
				if (record.type === 'entry') yield record.entry
				else if (record.type === 'error')
					throw guestFailure(record, plan.root, plan.maxVisitedEntries)
				continue
			}
			const settled = run.outcome()
			if (settled === undefined) {
				await run.news()
				continue
			}
			if (!settled.ok) throw settled.error
			if (!finalised) {
				finalised = true
				run.finalise(settled.result)
				continue
			}
			if (settled.result.aborted && callerSignal?.aborted) throw abortReason(callerSignal)
			checkResult(settled.result, run.parser.ended)
			return
		}
	} finally {
		callerSignal?.removeEventListener('abort', forwardAbort)
		await run.closeEarly()
	}
}
