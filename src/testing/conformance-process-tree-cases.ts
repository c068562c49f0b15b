/**
 * The conformance suite's case for "abort means the whole tree": an aborted exec ends every
 * descendant of its command, also those that left its process group and kernel session. Gated by
 * `capabilities.killsDetachedDescendants`.
 *
 * Each descendant beats: it rewrites a counter file every 50 ms (for at most 10 s, so a sandbox that
 * leaks it is not written to for ever). The case first sees both counters move (they really
 * started, and `setsid` exists), aborts, then reads each counter twice across a window in which a
 * live beat would have moved it several times.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Sandbox } from '../contract/sandbox.js'
import { type SuiteContext, scratch } from './conformance-context.js'
import { waitUntil } from './conformance-fixtures.js'

const BEAT_SCRIPT = 'i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo $i > "$1"; sleep 0.05; done'
/** A `setsid` child, and a double-forked grandchild in a session of its own (a daemon's shape). */
const ESCAPING_SCRIPT = [
	'beat=$1; dir=$2',
	'setsid sh -c "$beat" sh "$dir/setsid" &',
	'(setsid sh -c "$beat" sh "$dir/double-forked" &)',
	'echo started',
	// Long past the abort; a sandbox that ignores the abort waits this out and reports a success.
	'exec sleep 10',
].join('\n')
const DESCENDANTS = ['setsid', 'double-forked'] as const
/** Eight beats and more: a live descendant moves its counter inside it. */
const STILLNESS_WINDOW_MS = 600

async function readCounter(sandbox: Sandbox, path: string): Promise<string | undefined> {
	try {
		return (await sandbox.readFile(path)).toString('utf8')
	} catch {
		return undefined
	}
}

/**
 * Whether both counters move: a first reading of each, then polling until each differs from it.
 * A loaded host may run a beat far slower than every 50 ms, so any move within the budget counts.
 */
async function countersMoving(sandbox: Sandbox, dir: string, budgetMs: number): Promise<boolean> {
	const deadline = Date.now() + budgetMs
	const read = () => Promise.all(DESCENDANTS.map((name) => readCounter(sandbox, `${dir}/${name}`)))
	let first = await read()
	while (first.some((value) => value === undefined || value === '')) {
		if (Date.now() >= deadline) return false
		await sleep(50)
		first = await read()
	}
	const moved = DESCENDANTS.map(() => false)
	while (Date.now() < deadline) {
		await sleep(100)
		const now = await read()
		now.forEach((value, index) => {
			if (value !== undefined && value !== '' && value !== first[index]) moved[index] = true
		})
		if (moved.every(Boolean)) return true
	}
	return false
}

export function defineProcessTreeCases({ test, expect, options }: SuiteContext): void {
	const capability = options.capabilities?.killsDetachedDescendants ?? true
	test(
		'abort ends every descendant, including setsid/double-forked ones',
		async (sandbox) => {
			const dir = scratch(sandbox, 'tree')
			await sandbox.writeFile(`${dir}/keep`, '')
			const controller = new AbortController()
			let started = false
			const settled = sandbox
				.exec('/bin/sh', ['-c', ESCAPING_SCRIPT, 'sh', BEAT_SCRIPT, dir], {
					signal: controller.signal,
					onOutput: (chunk) => {
						if (chunk.data.includes('started')) started = true
					},
				})
				.then(
					(result) => ({ result }),
					(error: unknown) => ({ error }),
				)
			expect(await waitUntil(() => started, 5000), 'the command started').toBe(true)
			// Well inside the command's 10 s: the abort must still find it running.
			const moving = await countersMoving(sandbox, dir, 7000)
			expect(moving, 'both descendants were beating before the abort').toBe(true)
			controller.abort()
			const outcome = await settled
			if ('result' in outcome) {
				expect(outcome.result.exitCode, 'exit code of the aborted exec').not.toBe(0)
			}
			const before = await Promise.all(
				DESCENDANTS.map((name) => readCounter(sandbox, `${dir}/${name}`)),
			)
			await sleep(STILLNESS_WINDOW_MS)
			const after = await Promise.all(
				DESCENDANTS.map((name) => readCounter(sandbox, `${dir}/${name}`)),
			)
			const alive = DESCENDANTS.filter((_, index) => after[index] !== before[index])
			expect(alive, 'descendants still running after the aborted exec settled').toEqual([])
		},
		capability === true
			? {}
			: { skipReason: `the sandbox cannot kill detached descendants: ${capability.reason}` },
	)
}
