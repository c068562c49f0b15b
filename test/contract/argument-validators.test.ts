import { describe, expect, it } from 'vitest'
import {
	CONFIG_SITE,
	callSite,
	describeIntegerRange,
	describeKind,
	describeReceived,
	MAX_TIMER_MS,
	optionalBoolean,
	optionalDurationMs,
	optionalEnvironment,
	optionalFunction,
	optionalInteger,
	optionalNumber,
	optionalObject,
	optionalSignal,
	optionalString,
	optionalStringArray,
	refuseUnknownKeys,
	requireContent,
	requireDurationMs,
	requireInteger,
	requireIntegerText,
	requireNumber,
	requireObject,
	requireOneOf,
	requireString,
	signalOfOptions,
} from '../../src/contract/argument-validators.js'
import {
	SandboxArgumentError,
	SandboxConfigError,
	SandboxError,
} from '../../src/contract/errors.js'

const site = callSite('exec')

/** The error `run` throws (the test fails when it returns). */
function thrown(run: () => unknown): unknown {
	try {
		run()
	} catch (error) {
		return error
	}
	throw new Error('expected a refusal')
}

describe('describeReceived', () => {
	it.each([
		[Number.NaN, 'NaN'],
		[Number.POSITIVE_INFINITY, 'Infinity'],
		[Number.NEGATIVE_INFINITY, '-Infinity'],
		[-0, '-0'],
		[-5, '-5'],
		[1.5, '1.5'],
		[null, 'null'],
		[undefined, 'undefined'],
		[true, 'true'],
		[10n, '10n'],
		[() => 1, 'a function'],
		[Symbol('s'), 'a symbol'],
		['abc', '"abc"'],
		[[1, 2], 'an array of length 2'],
		[{ a: 1 }, 'an object'],
		[Object.create(null), 'an object'],
		[new Map(), 'a Map'],
		[Buffer.from('abcd'), 'a Buffer of 4 bytes'],
		[new Uint8Array(3), 'a Uint8Array of 3 bytes'],
		[new AbortController(), 'an AbortController'],
	])('describes %s as %s', (value, expected) => {
		expect(describeReceived(value)).toBe(expected)
	})

	it('cuts a long string to 60 characters and says how long it was', () => {
		const long = 'x'.repeat(100)
		expect(describeReceived(long)).toBe(`"${'x'.repeat(60)}"… (100 characters)`)
	})
})

describe('describeKind (for values that may be secrets)', () => {
	it.each([
		['hunter2', 'a string'],
		[12345, 'a number'],
		[Number.NaN, 'a number'],
		[null, 'null'],
		[undefined, 'undefined'],
		[[1], 'an array'],
		[{ a: 1 }, 'an object'],
		[() => 1, 'a function'],
	])('names only the kind of %s: %s', (value, expected) => {
		expect(describeKind(value)).toBe(expected)
	})
})

describe('describeIntegerRange', () => {
	it.each([
		[{ min: 1 }, 'a positive integer'],
		[{ min: 0 }, 'a non-negative integer'],
		[{ min: 2 }, 'an integer ≥ 2'],
		[{}, 'an integer'],
		[{ min: 1, max: 65_535 }, 'an integer in 1..65535'],
	])('%j reads %s', (range, expected) => {
		expect(describeIntegerRange(range)).toBe(expected)
	})
})

describe('the sites', () => {
	it('a call site throws SandboxArgumentError with method, parameter, expected, received', () => {
		const error = thrown(() => requireInteger(site, 'options.timeout', Number.NaN, { min: 1 }))
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect(error).toBeInstanceOf(SandboxError)
		expect(error).toMatchObject({
			name: 'SandboxArgumentError',
			reason: 'invalid-argument',
			retryable: false,
			method: 'exec',
			parameter: 'options.timeout',
			expected: 'a positive integer',
			received: 'NaN',
			message: 'exec: options.timeout must be a positive integer, got NaN',
		})
	})

	it('the config site throws SandboxConfigError naming the field, with the same wording', () => {
		const error = thrown(() => requireInteger(CONFIG_SITE, 'memoryLimitMb', null, { min: 1 }))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({
			field: 'memoryLimitMb',
			reason: 'invalid-config',
			expected: 'a positive integer',
			received: 'null',
			message: 'memoryLimitMb: must be a positive integer, got null',
		})
	})
})

type Check = (value: unknown) => unknown

/** [title, check, accepted values, refused values with the message tail they must produce] */
const table: Array<[string, Check, unknown[], Array<[unknown, string]>]> = [
	[
		'requireInteger 1..10',
		(v) => requireInteger(site, 'n', v, { min: 1, max: 10 }),
		[1, 10],
		[
			[0, 'n must be an integer in 1..10, got 0'],
			[11, 'n must be an integer in 1..10, got 11'],
			[1.5, 'n must be an integer in 1..10, got 1.5'],
			[Number.NaN, 'n must be an integer in 1..10, got NaN'],
			[Number.POSITIVE_INFINITY, 'n must be an integer in 1..10, got Infinity'],
			['5', 'n must be an integer in 1..10, got "5"'],
			[null, 'n must be an integer in 1..10, got null'],
			[undefined, 'n must be an integer in 1..10, got undefined'],
		],
	],
	[
		'optionalInteger ≥ 0',
		(v) => optionalInteger(site, 'n', v, { min: 0 }),
		[undefined, 0, Number.MAX_SAFE_INTEGER],
		[
			[-1, 'n must be a non-negative integer, got -1'],
			[null, 'n must be a non-negative integer, got null'],
			[2 ** 53, `n must be a non-negative integer, got ${2 ** 53}`],
		],
	],
	[
		'requireNumber 0.01..1024',
		(v) => requireNumber(site, 'cpuLimit', v, { min: 0.01, max: 1024 }),
		[0.01, 0.5, 1, 1024],
		[
			[0, 'cpuLimit must be a number in 0.01..1024, got 0'],
			[0.001, 'cpuLimit must be a number in 0.01..1024, got 0.001'],
			[1025, 'cpuLimit must be a number in 0.01..1024, got 1025'],
			[Number.NaN, 'cpuLimit must be a number in 0.01..1024, got NaN'],
			[Number.POSITIVE_INFINITY, 'cpuLimit must be a number in 0.01..1024, got Infinity'],
			['2', 'cpuLimit must be a number in 0.01..1024, got "2"'],
			[null, 'cpuLimit must be a number in 0.01..1024, got null'],
		],
	],
	[
		'optionalNumber',
		(v) => optionalNumber(site, 'cpuLimit', v, { min: 0.5, max: 2 }),
		[undefined, 0.5, 2],
		[[-1, 'cpuLimit must be a number in 0.5..2, got -1']],
	],
	[
		'requireDurationMs',
		(v) => requireDurationMs(site, 't', v),
		[1, MAX_TIMER_MS],
		[
			[0, `t must be an integer number of milliseconds in 1..${MAX_TIMER_MS}, got 0`],
			[
				MAX_TIMER_MS + 1,
				`t must be an integer number of milliseconds in 1..${MAX_TIMER_MS}, got ${MAX_TIMER_MS + 1}`,
			],
			[-5, `t must be an integer number of milliseconds in 1..${MAX_TIMER_MS}, got -5`],
		],
	],
	[
		'optionalDurationMs from 0',
		(v) => optionalDurationMs(site, 't', v, { min: 0 }),
		[undefined, 0],
		[[Number.NaN, `t must be an integer number of milliseconds in 0..${MAX_TIMER_MS}, got NaN`]],
	],
	[
		'requireIntegerText',
		(v) => requireIntegerText(site, '--n', v as string | undefined, { min: 1 }),
		['1', '007'],
		[
			['0', '--n must be a positive integer, got "0"'],
			['-1', '--n must be a positive integer, got "-1"'],
			['1e3', '--n must be a positive integer, got "1e3"'],
			[' 5', '--n must be a positive integer, got " 5"'],
			['', '--n must be a positive integer, got ""'],
			[undefined, '--n must be a positive integer, got nothing'],
			['99999999999999999999', '--n must be a positive integer, got "99999999999999999999"'],
		],
	],
	[
		'requireString non-empty',
		(v) => requireString(site, 'command', v, { nonEmpty: true }),
		['ls'],
		[
			['', 'command must be a non-empty string, got ""'],
			[42, 'command must be a non-empty string, got 42'],
			[['ls'], 'command must be a non-empty string, got an array of length 1'],
		],
	],
	[
		'optionalString',
		(v) => optionalString(site, 'options.cwd', v),
		[undefined, '', 'sub'],
		[
			[42, 'options.cwd must be a string, got 42'],
			[null, 'options.cwd must be a string, got null'],
		],
	],
	[
		'optionalBoolean',
		(v) => optionalBoolean(site, 'detach', v),
		[undefined, true, false],
		[['yes', 'detach must be a boolean, got "yes"']],
	],
	[
		'requireOneOf',
		(v) => requireOneOf(site, 'mode', v, ['a', 'b', 'c']),
		['a', 'c'],
		[['d', "mode must be 'a', 'b' or 'c', got \"d\""]],
	],
	[
		'optionalStringArray',
		(v) => optionalStringArray(site, 'args', v),
		[undefined, [], ['a', '']],
		[
			['-l', 'args must be an array of strings, got "-l"'],
			[['a', 7], 'args[1] must be a string, got 7'],
		],
	],
	[
		'requireObject',
		(v) => requireObject(site, 'options', v),
		[{}, { a: 1 }],
		[
			[null, 'options must be an object, got null'],
			[[], 'options must be an object, got an array of length 0'],
			['x', 'options must be an object, got "x"'],
		],
	],
	[
		'refuseUnknownKeys names the key and what is known',
		(v) => refuseUnknownKeys(site, 'backend', v as Record<string, unknown>, ['tier', 'namespace']),
		[{}, { tier: 'x' }, { tier: 'x', namespace: 'y' }],
		[
			[
				{ tier: 'x', egress: { kind: 'deny-all' } },
				'backend.egress must be absent: not a setting of backend (known: tier, namespace), got an object',
			],
			[
				{ Tier: 1 },
				'backend.Tier must be absent: not a setting of backend (known: tier, namespace), got 1',
			],
		],
	],
	[
		'optionalObject (null is not absent)',
		(v) => optionalObject(site, 'options', v),
		[undefined, {}],
		[[null, 'options must be an object, got null']],
	],
	[
		'optionalEnvironment never echoes a value',
		(v) => optionalEnvironment(site, 'options.env', v),
		[undefined, {}, { A: 'b' }],
		[
			[{ TOKEN: 12345 }, 'options.env.TOKEN must be a string, got a number'],
			[{ TOKEN: null }, 'options.env.TOKEN must be a string, got null'],
			['A=b', 'options.env must be an object of string values, got a string'],
		],
	],
	[
		'optionalSignal',
		(v) => optionalSignal(site, 'options.signal', v),
		[undefined, new AbortController().signal, AbortSignal.timeout(1000)],
		[
			['abort', 'options.signal must be an AbortSignal, got "abort"'],
			[new AbortController(), 'options.signal must be an AbortSignal, got an AbortController'],
			[null, 'options.signal must be an AbortSignal, got null'],
		],
	],
	[
		'signalOfOptions',
		(v) => signalOfOptions(site, v),
		[undefined, {}, { signal: new AbortController().signal }],
		[
			[null, 'options must be an object, got null'],
			[{ signal: 1 }, 'options.signal must be an AbortSignal, got 1'],
		],
	],
	[
		'optionalFunction',
		(v) => optionalFunction(site, 'onOutput', v),
		[undefined, () => {}],
		[['log', 'onOutput must be a function, got "log"']],
	],
	[
		'requireContent never echoes content',
		(v) => requireContent(site, 'content', v),
		['', 'text', Buffer.from('x'), new Uint8Array(2)],
		[
			[4242, 'content must be a string or a Uint8Array (Buffer), got a number'],
			[{ secret: 'x' }, 'content must be a string or a Uint8Array (Buffer), got an object'],
			[null, 'content must be a string or a Uint8Array (Buffer), got null'],
			[[1, 2], 'content must be a string or a Uint8Array (Buffer), got an array'],
		],
	],
]

describe.each(table)('%s', (_title, check, accepted, refused) => {
	it.each(accepted.map((value) => [value]))('accepts %s', (value) => {
		expect(() => check(value)).not.toThrow()
	})
	it.each(refused)('refuses %s', (value, tail) => {
		const error = thrown(() => check(value))
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect((error as Error).message).toBe(`exec: ${tail}`)
	})
})

describe('values come back typed and unchanged', () => {
	it('returns what it checked', () => {
		const signal = new AbortController().signal
		expect(requireInteger(site, 'n', 5, { min: 1 })).toBe(5)
		expect(requireIntegerText(site, 'n', '42', { min: 1 })).toBe(42)
		expect(optionalSignal(site, 's', signal)).toBe(signal)
		expect(optionalObject(site, 'o', undefined)).toEqual({})
		expect(requireOneOf(site, 'm', 'b', ['a', 'b'])).toBe('b')
	})
})
