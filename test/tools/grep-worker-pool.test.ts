/**
 * `grep`'s matching runs on worker threads: a pattern that backtracks without end leaves this
 * event loop free (a turn of it comes before the match ends), ends by the worker's termination
 * with the named budget error, and the next match gets a fresh worker. At most the cap run at
 * once; the rest wait their turn. Ordering is asserted through events, never through time.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { compileGrepQuery, matchLines } from '../../src/tools/grep-matcher.js'
import { GrepWorkerPool } from '../../src/tools/grep-worker-pool.js'
import { GrepPatternTimeoutError } from '../../src/tools/tool-errors.js'

const BACKTRACKING = compileGrepQuery({ pattern: '(a+)+b', regex: true, ignoreCase: false })
const FOREVER = 'a'.repeat(40)
const task = (text: string, pattern = BACKTRACKING) => ({
	source: pattern.source,
	flags: pattern.flags,
	text,
	limit: 10,
})

const pools: GrepWorkerPool[] = []
afterAll(async () => {
	await Promise.all(pools.map((pool) => pool.close()))
})

describe('grep off the event loop', () => {
	it('keeps the event loop turning while a backtracking pattern runs, then names its budget', async () => {
		const events: string[] = []
		const grep = matchLines(BACKTRACKING, FOREVER, 10, 2000).then(
			() => events.push('grep matched'),
			(error: unknown) =>
				events.push(error instanceof GrepPatternTimeoutError ? 'grep timed out' : 'grep failed'),
		)
		await new Promise((resolve) => setImmediate(resolve))
		events.push('event loop turned')
		await grep
		expect(events).toEqual(['event loop turned', 'grep timed out'])
	})

	it('replaces the terminated worker: the next match is answered', async () => {
		await expect(matchLines(BACKTRACKING, FOREVER, 10, 20)).rejects.toBeInstanceOf(
			GrepPatternTimeoutError,
		)
		const literal = compileGrepQuery({ pattern: 'x', regex: false, ignoreCase: false })
		expect((await matchLines(literal, 'a\nx\nb', 10, 2000)).map((m) => m.line)).toEqual([2])
	})

	it('runs at most its cap at once; the rest wait their turn and are then served', async () => {
		const pool = new GrepWorkerPool(2)
		pools.push(pool)
		const running: number[] = []
		const runs = Array.from({ length: 5 }, () =>
			pool.run(task(FOREVER), 30).then((outcome) => {
				running.push(pool.running)
				return outcome.kind
			}),
		)
		expect(pool.running).toBe(2)
		expect(await Promise.all(runs)).toEqual(Array(5).fill('timed-out'))
		expect(Math.max(...running)).toBeLessThanOrEqual(2)
		expect(pool.running).toBe(0)
	})

	it("ends a match with the caller's abort, and a waiting one without running it", async () => {
		const pool = new GrepWorkerPool(1)
		pools.push(pool)
		const controller = new AbortController()
		const first = pool.run(task(FOREVER), 60_000, controller.signal)
		const waiting = pool.run(task(FOREVER), 60_000, controller.signal).catch((error) => error)
		controller.abort(new Error('caller gone'))
		expect(await first).toMatchObject({ kind: 'aborted' })
		expect(await waiting).toMatchObject({ message: 'caller gone' })
		expect(pool.running).toBe(0)
	})
})
