/**
 * The one set of argument checks every public entry point of the host side uses: the `Sandbox`
 * methods, the providers and their configuration, the tier entry points and the CLI. Pure. Each
 * check returns the value, typed, or throws the refusal its site builds: a call's argument
 * (`callSite('exec')`) is a `SandboxArgumentError`, a configuration field (`CONFIG_SITE`) a
 * `SandboxConfigError` — the same expected/received wording either way.
 *
 * `received` describes a value rather than echoing it: `NaN`, `Infinity`, `null`, `a function`, a
 * string cut to 60 characters; the secret-safe checks (environment values, file content) name only
 * the kind of value.
 */
import { isRecord } from '../common/is-record.js'
import { SandboxArgumentError, SandboxConfigError } from './errors.js'

/** Where a refusal is raised: it turns "parameter must be expected, got received" into an error. */
export interface ArgumentSite {
	refuse(parameter: string, expected: string, received: string): Error
}

/** The arguments of one method: refusals are `SandboxArgumentError`s naming it. */
export function callSite(method: string): ArgumentSite {
	return {
		refuse: (parameter, expected, received) =>
			new SandboxArgumentError(method, parameter, expected, received),
	}
}

/** Fields of a configuration object: refusals are `SandboxConfigError`s naming the field. */
export const CONFIG_SITE: ArgumentSite = {
	refuse: (field, expected, received) =>
		new SandboxConfigError(field, `must be ${expected}, got ${received}`, { expected, received }),
}

/** Largest delay a Node timer honours; anything above fires at once. */
export const MAX_TIMER_MS = 2_147_483_647

/** Characters of a string argument kept in `received`. */
export const RECEIVED_STRING_CHARS = 60

/** `an AbortController`, `a Map`, `a Uint8Array` (the u of type names is read as a consonant). */
function article(name: string): string {
	return /^[aeio]/i.test(name) ? `an ${name}` : `a ${name}`
}

/** The kind of a value, with nothing of its content: for values that may be secrets. */
export function describeKind(value: unknown): string {
	if (value === null) return 'null'
	if (Array.isArray(value)) return 'an array'
	switch (typeof value) {
		case 'undefined':
			return 'undefined'
		case 'function':
			return 'a function'
		case 'object': {
			const name = Object.getPrototypeOf(value)?.constructor?.name
			return typeof name === 'string' && name !== '' && name !== 'Object'
				? article(name)
				: 'an object'
		}
		default:
			return article(typeof value)
	}
}

/** What a refused value was, short and printable (`NaN`, `null`, `"abc…" (70 characters)`). */
export function describeReceived(value: unknown): string {
	switch (typeof value) {
		case 'number':
			return Object.is(value, -0) ? '-0' : String(value)
		case 'bigint':
			return `${value}n`
		case 'boolean':
			return String(value)
		case 'string':
			return value.length <= RECEIVED_STRING_CHARS
				? JSON.stringify(value)
				: `${JSON.stringify(value.slice(0, RECEIVED_STRING_CHARS))}… (${value.length} characters)`
		case 'object':
			if (value === null) return 'null'
			if (Array.isArray(value)) return `an array of length ${value.length}`
			if (value instanceof Uint8Array) return `${describeKind(value)} of ${value.length} bytes`
			return describeKind(value)
		default:
			return describeKind(value)
	}
}

export interface IntegerRange {
	readonly min?: number
	readonly max?: number
}

/** `a positive integer`, `a non-negative integer`, `an integer in 1..65535`. */
export function describeIntegerRange(range: IntegerRange): string {
	const { min, max } = range
	if (max === undefined) {
		if (min === 1) return 'a positive integer'
		if (min === 0) return 'a non-negative integer'
		return min === undefined ? 'an integer' : `an integer ≥ ${min}`
	}
	return `an integer in ${min ?? Number.MIN_SAFE_INTEGER}..${max}`
}

/** A safe integer inside `range` (bounds inclusive). */
export function isIntegerIn(value: unknown, range: IntegerRange): value is number {
	return (
		typeof value === 'number' &&
		Number.isSafeInteger(value) &&
		(range.min === undefined || value >= range.min) &&
		(range.max === undefined || value <= range.max)
	)
}

export function requireInteger(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: IntegerRange,
): number {
	if (!isIntegerIn(value, range)) {
		throw site.refuse(parameter, describeIntegerRange(range), describeReceived(value))
	}
	return value
}

export function optionalInteger(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: IntegerRange,
): number | undefined {
	return value === undefined ? undefined : requireInteger(site, parameter, value, range)
}

export interface NumberRange {
	readonly min: number
	readonly max: number
}

/** A finite number inside `range` (bounds inclusive), fractions allowed: `cpuLimit` cores. */
export function requireNumber(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: NumberRange,
): number {
	if (
		typeof value !== 'number' ||
		!Number.isFinite(value) ||
		value < range.min ||
		value > range.max
	) {
		throw site.refuse(parameter, `a number in ${range.min}..${range.max}`, describeReceived(value))
	}
	return value
}

export function optionalNumber(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: NumberRange,
): number | undefined {
	return value === undefined ? undefined : requireNumber(site, parameter, value, range)
}

export interface DurationRange {
	/** Default 1: a zero duration means nothing useful unless the caller says it does. */
	readonly min?: number
	/** Default `MAX_TIMER_MS`. */
	readonly max?: number
}

/** Milliseconds: an integer a timer can wait for. */
export function requireDurationMs(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: DurationRange = {},
): number {
	const bounds = { min: range.min ?? 1, max: range.max ?? MAX_TIMER_MS }
	if (!isIntegerIn(value, bounds)) {
		throw site.refuse(
			parameter,
			`an integer number of milliseconds in ${bounds.min}..${bounds.max}`,
			describeReceived(value),
		)
	}
	return value
}

export function optionalDurationMs(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	range: DurationRange = {},
): number | undefined {
	return value === undefined ? undefined : requireDurationMs(site, parameter, value, range)
}

/** Decimal digits only (no sign, no exponent, no blank), as a command line or file gives them. */
export function requireIntegerText(
	site: ArgumentSite,
	parameter: string,
	raw: string | undefined,
	range: IntegerRange,
): number {
	const value = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : Number.NaN
	if (!isIntegerIn(value, range)) {
		throw site.refuse(
			parameter,
			describeIntegerRange(range),
			raw === undefined ? 'nothing' : describeReceived(raw),
		)
	}
	return value
}

export function requireString(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	options: { readonly nonEmpty?: boolean } = {},
): string {
	if (typeof value !== 'string' || (options.nonEmpty === true && value === '')) {
		throw site.refuse(
			parameter,
			options.nonEmpty === true ? 'a non-empty string' : 'a string',
			describeReceived(value),
		)
	}
	return value
}

export function optionalString(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	options: { readonly nonEmpty?: boolean } = {},
): string | undefined {
	return value === undefined ? undefined : requireString(site, parameter, value, options)
}

export function optionalBoolean(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): boolean | undefined {
	if (value === undefined || typeof value === 'boolean') return value
	throw site.refuse(parameter, 'a boolean', describeReceived(value))
}

/** One of a closed set of strings. */
export function requireOneOf<T extends string>(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
	allowed: readonly T[],
): T {
	const found = allowed.find((candidate) => candidate === value)
	if (found === undefined) {
		const list = allowed.map((candidate) => `'${candidate}'`)
		const expected =
			list.length === 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} or ${list.at(-1)}`
		throw site.refuse(parameter, expected, describeReceived(value))
	}
	return found
}

export function optionalStringArray(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): readonly string[] | undefined {
	if (value === undefined) return undefined
	if (!Array.isArray(value)) {
		throw site.refuse(parameter, 'an array of strings', describeReceived(value))
	}
	value.forEach((entry: unknown, index) => {
		if (typeof entry !== 'string') {
			throw site.refuse(`${parameter}[${index}]`, 'a string', describeReceived(entry))
		}
	})
	return value as readonly string[]
}

export function requireObject(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): Record<string, unknown> {
	if (!isRecord(value)) throw site.refuse(parameter, 'an object', describeReceived(value))
	return value
}

/**
 * A configuration object holds only the keys its type declares: an unknown one (a misspelling, or
 * a setting this tier does not have) is refused by name rather than silently ignored, so a caller
 * can never believe a setting took effect that nothing reads.
 */
export function refuseUnknownKeys(
	site: ArgumentSite,
	parameter: string,
	value: Record<string, unknown>,
	known: readonly string[],
): void {
	for (const key of Object.keys(value)) {
		if (!known.includes(key)) {
			throw site.refuse(
				`${parameter}.${key}`,
				`absent: not a setting of ${parameter} (known: ${known.join(', ')})`,
				describeReceived(value[key]),
			)
		}
	}
}

/** An options argument: absent, or an object (`null` is refused, not treated as absent). */
export function optionalObject(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): Record<string, unknown> {
	return value === undefined ? {} : requireObject(site, parameter, value)
}

/**
 * An environment: names to string values. Values are never described (one may be a token), only
 * their kind; names are, since they are what the caller needs to find the mistake.
 */
export function optionalEnvironment(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): Readonly<Record<string, string>> | undefined {
	if (value === undefined) return undefined
	if (!isRecord(value)) {
		throw site.refuse(parameter, 'an object of string values', describeKind(value))
	}
	for (const [name, entry] of Object.entries(value)) {
		if (typeof entry !== 'string') {
			throw site.refuse(`${parameter}.${name}`, 'a string', describeKind(entry))
		}
	}
	return value as Readonly<Record<string, string>>
}

export function optionalSignal(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): AbortSignal | undefined {
	if (value === undefined || value instanceof AbortSignal) return value
	throw site.refuse(parameter, 'an AbortSignal', describeReceived(value))
}

export function optionalFunction<T>(
	site: ArgumentSite,
	parameter: string,
	value: T | undefined,
): T | undefined {
	if (value === undefined || typeof value === 'function') return value
	throw site.refuse(parameter, 'a function', describeReceived(value))
}

/** File content: a string or bytes. Only the kind of a refused value is named, never its content. */
export function requireContent(
	site: ArgumentSite,
	parameter: string,
	value: unknown,
): string | Uint8Array {
	if (typeof value === 'string' || value instanceof Uint8Array) return value
	throw site.refuse(parameter, 'a string or a Uint8Array (Buffer)', describeKind(value))
}

/** The `signal` of an options argument that may hold other fields: the object and the signal checked. */
export function signalOfOptions(site: ArgumentSite, options: unknown): AbortSignal | undefined {
	return optionalSignal(site, 'options.signal', optionalObject(site, 'options', options).signal)
}
