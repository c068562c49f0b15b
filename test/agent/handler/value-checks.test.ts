import { describe, expect, it } from 'vitest'
import { loadAgentConfig } from '../../../src/agent/handler/config.js'
import { AgentConfigError } from '../../../src/agent/handler/config-error.js'
import {
	describeIntegerRange,
	integerVariable,
	isIntegerIn,
	isStringArray,
	isStringRecord,
} from '../../../src/agent/handler/value-checks.js'
import { loadLifecycleConfig } from '../../../src/agent/lifecycle/lifecycle-config.js'
import { loadSessionConfig } from '../../../src/agent/sessions/session-config.js'

describe('isIntegerIn', () => {
	it.each([
		[0, { min: 0 }, true],
		[1, { min: 1 }, true],
		[65_535, { min: 0, max: 65_535 }, true],
		[65_536, { min: 0, max: 65_535 }, false],
		[-1, { min: 0 }, false],
		[1.5, { min: 0 }, false],
		[Number.NaN, { min: 0 }, false],
		[Number.POSITIVE_INFINITY, { min: 0 }, false],
		[2 ** 53, { min: 0 }, false],
		['1', { min: 0 }, false],
		[null, { min: 0 }, false],
	])('%s in %j: %s', (value, range, expected) => {
		expect(isIntegerIn(value, range)).toBe(expected)
	})
})

describe('isStringArray and isStringRecord', () => {
	it.each([
		[[], true],
		[['a', ''], true],
		[['a', 1], false],
		['a', false],
		[null, false],
	])('isStringArray(%j) is %s', (value, expected) => {
		expect(isStringArray(value)).toBe(expected)
	})

	it.each([
		[{}, true],
		[{ A: 'b' }, true],
		[{ A: 1 }, false],
		[['a'], false],
		[null, false],
		['A=b', false],
	])('isStringRecord(%j) is %s', (value, expected) => {
		expect(isStringRecord(value)).toBe(expected)
	})
})

describe('integerVariable', () => {
	it.each([
		[{ min: 1 }, 'a positive safe integer'],
		[{ min: 0 }, 'a non-negative safe integer'],
		[{ min: 0, max: 65_535 }, 'an integer in 0..65535'],
	])('describes %j as %s', (range, expected) => {
		expect(describeIntegerRange(range)).toBe(expected)
	})

	it.each([
		[undefined, 7],
		['', 7],
		['0', 0],
		['42', 42],
		[' 42 ', 42],
	])('reads %j as %s', (raw, expected) => {
		expect(integerVariable({ X: raw }, 'X', 7, { min: 0 })).toBe(expected)
	})

	it.each(['-1', '1.5', '1e3', 'lots', '0x10', '9007199254740993', '70000'])(
		'refuses %j naming the variable and the raw value',
		(raw) => {
			let caught: unknown
			try {
				integerVariable({ X: raw }, 'X', 7, { min: 0, max: 65_535 })
			} catch (error) {
				caught = error
			}
			expect(caught).toBeInstanceOf(AgentConfigError)
			expect(caught).toMatchObject({
				variable: 'X',
				message: `X must be an integer in 0..65535, got ${JSON.stringify(raw)}`,
			})
		},
	)
})

describe('every agent config reader refuses the same way, with one error class', () => {
	const LISTEN = { NAMZU_AGENT_UNIX_PATH: '/tmp/unused.sock' }
	it.each([
		[
			'NAMZU_AGENT_MAX_FRAME_BYTES',
			() => loadAgentConfig({ ...LISTEN, NAMZU_AGENT_MAX_FRAME_BYTES: '0' }),
		],
		['NAMZU_AGENT_MAX_SESSIONS', () => loadSessionConfig({ NAMZU_AGENT_MAX_SESSIONS: 'many' })],
		[
			'NAMZU_AGENT_QUIESCE_GRACE_MS',
			() => loadLifecycleConfig({ NAMZU_AGENT_QUIESCE_GRACE_MS: '-5' }),
		],
		[
			'NAMZU_AGENT_TCP_PORT',
			() => loadAgentConfig({ NAMZU_AGENT_TCP_PORT: '70000', NAMZU_AGENT_REQUIRE_TOKEN: '1' }),
		],
	])('%s', (variable, load) => {
		let caught: unknown
		try {
			load()
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(AgentConfigError)
		expect(caught).toMatchObject({ variable })
		expect((caught as Error).message).toMatch(new RegExp(`^${variable} must be `))
	})

	it('the tcp port message says the range and what came', () => {
		expect(() =>
			loadAgentConfig({ NAMZU_AGENT_TCP_PORT: '70000', NAMZU_AGENT_REQUIRE_TOKEN: '1' }),
		).toThrow('NAMZU_AGENT_TCP_PORT must be an integer in 0..65535, got "70000"')
	})
})
