/** The shared heartbeat rules: the guest's clamp, the host's echo window, the silence counter. */
import { describe, expect, it } from 'vitest'
import {
	acceptEchoedHeartbeatMs,
	clampRequestedHeartbeatMs,
	heartbeatPollMs,
	STREAM_HEARTBEAT_FRAME,
	StreamLiveness,
} from '../../src/wire/heartbeat.js'

describe('heartbeat constants', () => {
	it('the heartbeat frame is exactly { type: heartbeat }', () => {
		expect(JSON.stringify(STREAM_HEARTBEAT_FRAME)).toBe('{"type":"heartbeat"}')
	})
})

describe('clampRequestedHeartbeatMs (guest)', () => {
	it.each([
		[undefined, undefined],
		[0, undefined],
		[-5, undefined],
		['200', undefined],
		[Number.NaN, undefined],
		[10, 100],
		[100, 100],
		[250, 250],
		[15_000, 15_000],
	])('a request of %o is used as %o', (requested, expected) => {
		expect(clampRequestedHeartbeatMs(requested)).toBe(expected)
	})
})

describe('acceptEchoedHeartbeatMs (host)', () => {
	it.each([
		[1000, undefined, undefined],
		[1000, '1000', undefined],
		[1000, 99, undefined],
		[1000, 100, 100],
		[1000, 1000, 1000],
		[1000, 4000, 4000],
		[1000, 4001, undefined],
		[50, 100, 100],
		[10, 100, undefined],
	])('asking %i, an echo of %o is honoured as %o', (requested, echoed, expected) => {
		expect(acceptEchoedHeartbeatMs(requested, echoed)).toBe(expected)
	})
})

describe('heartbeatPollMs', () => {
	it.each([
		[15_000, 3750],
		[100, 25],
		[20, 10],
	])('an interval of %i is polled every %i ms', (interval, poll) => {
		expect(heartbeatPollMs(interval)).toBe(poll)
	})
})

describe('StreamLiveness', () => {
	it('declares a stream dead after three whole silent intervals, not before', () => {
		const liveness = new StreamLiveness(100, 0)
		expect(liveness.check(299, false)).toBe('alive')
		expect(liveness.check(300, false)).toBe('dead')
	})

	it('any received bytes restart the silence', () => {
		const liveness = new StreamLiveness(100, 0)
		liveness.noteBytes(250)
		expect(liveness.check(500, false)).toBe('alive')
		expect(liveness.check(550, false)).toBe('dead')
	})

	it('time paused for backpressure is not counted as silence', () => {
		const liveness = new StreamLiveness(100, 0)
		expect(liveness.check(1000, true)).toBe('alive')
		expect(liveness.check(1299, false)).toBe('alive')
		expect(liveness.check(1300, false)).toBe('dead')
	})
})
