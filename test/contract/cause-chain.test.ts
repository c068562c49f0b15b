import { describe, expect, it } from 'vitest'
import {
	causeChain,
	causeCode,
	findCause,
	findCauseOfType,
	MAX_CAUSE_DEPTH,
} from '../../src/contract/cause-chain.js'
import { SandboxArgumentError, SandboxError } from '../../src/contract/errors.js'
import {
	AgentDialFailedError,
	ConnectTimeoutError,
} from '../../src/host/transport/transport-errors.js'

function errno(code: string, message = code): Error {
	return Object.assign(new Error(message), { code })
}

function chainOf(length: number): Error {
	let error = new Error('link 0')
	for (let index = 1; index < length; index++) {
		error = new Error(`link ${index}`, { cause: error })
	}
	return error
}

const looped = new Error('outer')
const inner = new Error('inner', { cause: looped })
Object.assign(looped, { cause: inner })

const dialFailure = new AgentDialFailedError('tcp', 3, 120, {
	cause: new Error('connect failed', { cause: errno('ENOTFOUND') }),
})

describe('causeChain', () => {
	it.each([
		['a plain value', 'boom', []],
		['undefined', undefined, []],
		['one error', new Error('only'), ['only']],
		[
			'a chain',
			new Error('a', { cause: new Error('b', { cause: new Error('c') }) }),
			['a', 'b', 'c'],
		],
		['a chain ending in a non-Error cause', new Error('a', { cause: { code: 'EX' } }), ['a']],
		['a loop', looped, ['outer', 'inner']],
		[
			'a chain longer than the bound',
			chainOf(MAX_CAUSE_DEPTH + 3),
			Array.from({ length: MAX_CAUSE_DEPTH }, (_, i) => `link ${MAX_CAUSE_DEPTH + 2 - i}`),
		],
	] as const)('%s → %j', (_label, error, messages) => {
		expect(causeChain(error).map((link) => link.message)).toEqual(messages)
	})
})

describe('causeCode', () => {
	it.each([
		['the error itself', errno('ECONNREFUSED'), 'ECONNREFUSED'],
		['a dial failure over a resolver error', dialFailure, 'ENOTFOUND'],
		[
			'the outermost code wins',
			Object.assign(new Error('outer', { cause: errno('ENOENT') }), { code: 'EPIPE' }),
			'EPIPE',
		],
		['a connect timeout', new ConnectTimeoutError(500), 'ETIMEDOUT'],
		['no code anywhere', new Error('a', { cause: new Error('b') }), undefined],
		['a numeric code is not one', Object.assign(new Error('n'), { code: 7 }), undefined],
		['a non-Error', { code: 'ENOENT' }, undefined],
	] as const)('%s → %s', (_label, error, code) => {
		expect(causeCode(error)).toBe(code)
	})
})

describe('findCause and findCauseOfType', () => {
	const argument = new SandboxArgumentError('exec', 'command', 'a string', 'a number')
	const wrapped = new SandboxError('outer', 'wrapper', { cause: argument })

	it.each([
		['the error itself', argument, SandboxArgumentError, argument],
		['a cause', wrapped, SandboxArgumentError, argument],
		['the outermost match', wrapped, SandboxError, wrapped],
		['no match', new Error('x', { cause: new Error('y') }), SandboxError, undefined],
		['a loop without a match', looped, SandboxError, undefined],
	] as const)('%s', (_label, error, type, found) => {
		expect(findCauseOfType(error, type)).toBe(found)
	})

	it('takes any predicate', () => {
		expect(findCause(wrapped, (link) => link.message.startsWith('exec:'))).toBe(argument)
		expect(findCause(wrapped, () => false)).toBeUndefined()
	})
})
