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

	const parser = new WalkOutputParser(plan.root, plan.maxEntries)
	const queue: WalkRecord[] = []
	let protocolFailure: unknown
	let settled: Settled | undefined
	// Read through a function: `settled` is written by callbacks, which narrowing cannot see.
	const outcome = (): Settled | undefined => settled
	let streamedChars = 0
	let wake: (() => void) | undefined
	const notify = () => {
		const resolve = wake
		wake = undefined
		resolve?.()
	}

	const controller = new AbortController()
	const forwardAbort = () => {
		controller.abort(callerSignal === undefined ? undefined : abortReason(callerSignal))
		notify()
	}
	callerSignal?.addEventListener('abort', forwardAbort, { once: true })

	const feed = (text: string) => {
		if (protocolFailure !== undefined) return
		try {
			queue.push(...parser.push(text))
		} catch (error) {
			protocolFailure = error
			controller.abort(error)
		}
	}
	const onOutput: SandboxExecOptions['onOutput'] = (chunk) => {
		if (chunk.stream !== 'stdout') return
		streamedChars += chunk.data.length
		feed(chunk.data)
		notify()
	}

	const run = new Promise<SandboxExecResult>((resolve) =>
		resolve(
			exec('node', ['-e', WALK_PROGRAM_SOURCE, JSON.stringify(plan)], {
				signal: controller.signal,
				onOutput,
			}),
		),
	).then(
		(result) => {
			settled = { ok: true, result }
		},
		(error: unknown) => {
			settled = { ok: false, error }
		},
	)
	void run.finally(notify)

	let finalised = false
	try {
		for (;;) {
			if (callerSignal?.aborted) throw abortReason(callerSignal)
			if (protocolFailure !== undefined) throw protocolFailure
			const record = queue.shift()
			if (record !== undefined) {
				if (record.type === 'entry') yield record.entry
				else if (record.type === 'error')
					throw guestFailure(record, plan.root, plan.maxVisitedEntries)
				continue
			}
			if (settled === undefined) {
				await new Promise<void>((resolve) => {
					wake = resolve
				})
				continue
			}
			if (!settled.ok) throw settled.error
			if (!finalised) {
				// An exec that did not stream (or streamed only part) still carries the full stdout.
				finalised = true
				const rest = settled.result.stdout.slice(streamedChars)
				if (rest !== '') feed(rest)
				if (protocolFailure === undefined) {
					try {
						parser.finish()
					} catch (error) {
						protocolFailure = error
					}
				}
				continue
			}
			if (settled.result.aborted && callerSignal?.aborted) throw abortReason(callerSignal)
			checkResult(settled.result, parser.ended)
			return
		}
	} finally {
		callerSignal?.removeEventListener('abort', forwardAbort)
		if (settled === undefined) {
			const reason = new DOMException('The walk iterator was closed', 'AbortError')
			if (!controller.signal.aborted) controller.abort(reason)
			await run
			const final = outcome()
			const cancelFailed =
				final !== undefined &&
				!final.ok &&
				!isAbortError(final.error, reason) &&
				!isAbortError(final.error, controller.signal.reason)
			// biome-ignore lint/correctness/noUnsafeFinally: a cancellation the backend could not confirm must reach the caller (it retires the sandbox), even over an early return.
			if (cancelFailed) throw final.error
		}
	}
}
