import { describe, expect, it } from 'vitest'
import { raceSignal, settleWithin } from '../../src/common/bounded-promise.js'
import { POLL_INTERVAL_MS, pollUntil } from '../../src/common/poll-until.js'

const never = new Promise<never>(() => {})

describe('settleWithin', () => {
	it('answers the value of a promise that settles in time', async () => {
		expect(await settleWithin(Promise.resolve(7), 60_000)).toBe(7)
	})

	it('answers undefined once the bound passes, for a timer that is referenced or not', async () => {
		expect(await settleWithin(never, 1)).toBeUndefined()
		expect(await settleWithin(never, 1, { ref: false })).toBeUndefined()
	})

	it('passes a rejection through', async () => {
		await expect(settleWithin(Promise.reject(new Error('boom')), 60_000)).rejects.toThrow('boom')
	})
})

describe('raceSignal', () => {
	it('answers the work unchanged without a signal, and its value with one', async () => {
		const work = Promise.resolve('done')
		expect(raceSignal(work, undefined)).toBe(work)
		expect(await raceSignal(work, new AbortController().signal)).toBe('done')
	})

	it("rejects with the signal's reason, at once or when it aborts", async () => {
		const reason = new Error('stop')
		await expect(raceSignal(never, AbortSignal.abort(reason))).rejects.toBe(reason)
		const controller = new AbortController()
		const raced = raceSignal(never, controller.signal)
		controller.abort(reason)
		await expect(raced).rejects.toBe(reason)
	})

	it('passes the work rejection through', async () => {
		const signal = new AbortController().signal
		await expect(raceSignal(Promise.reject(new Error('boom')), signal)).rejects.toThrow('boom')
	})
})

describe('pollUntil', () => {
	it('answers true as soon as the probe does, asking again after each interval', async () => {
		let asked = 0
		const done = await pollUntil(() => {
			asked += 1
			return asked === 3
		}, performance.now() + 60_000)
		expect(done).toBe(true)
		expect(asked).toBe(3)
		expect(POLL_INTERVAL_MS).toBe(10)
	})

	it('asks once and answers false when the deadline has already passed', async () => {
		let asked = 0
		const done = await pollUntil(async () => {
			asked += 1
			return false
		}, performance.now() - 1)
		expect(done).toBe(false)
		expect(asked).toBe(1)
	})
})
