/**
 * Checks a call's arguments against the tool's own JSON Schema (the subset in `tool-types.ts`),
 * pure. A refusal is the package's `SandboxArgumentError`, naming the tool as the method and the
 * argument's path as the parameter; `received` describes the value and never echoes it, since an
 * argument may be file content or an environment value.
 */
import { isRecord } from '../common/is-record.js'
import { SandboxArgumentError } from '../index.js'
import type { ToolArguments, ToolJsonSchema, ToolObjectSchema } from './tool-types.js'

function describeValue(value: unknown): string {
	if (value === null) return 'null'
	if (Array.isArray(value)) return `an array of ${value.length}`
	if (typeof value === 'number') {
		return Number.isFinite(value) ? (Number.isInteger(value) ? 'an integer' : 'a number') : 'NaN'
	}
	if (typeof value === 'string') return `a string of ${value.length} characters`
	return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

function expectation(schema: ToolJsonSchema): string {
	switch (schema.type) {
		case 'string':
			if (schema.enum) return `one of ${schema.enum.join(', ')}`
			return `a string${schema.maxLength === undefined ? '' : ` of at most ${schema.maxLength} characters`}`
		case 'integer':
			return `an integer in ${schema.minimum ?? '-∞'}..${schema.maximum ?? '∞'}`
		case 'boolean':
			return 'a boolean'
		case 'array':
			return `an array${schema.maxItems === undefined ? '' : ` of at most ${schema.maxItems} items`} of ${expectation(schema.items)}`
		case 'object':
			return 'an object'
	}
}

function check(method: string, path: string, schema: ToolJsonSchema, value: unknown): void {
	const refuse = (expected = expectation(schema), received = describeValue(value)) =>
		new SandboxArgumentError(method, path, expected, received)
	switch (schema.type) {
		case 'string': {
			if (typeof value !== 'string') throw refuse()
			if (schema.enum && !schema.enum.includes(value)) throw refuse()
			if (schema.minLength !== undefined && value.length < schema.minLength) throw refuse()
			if (schema.maxLength !== undefined && value.length > schema.maxLength) throw refuse()
			if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value)) {
				throw refuse(`a string matching ${schema.pattern}`)
			}
			return
		}
		case 'integer': {
			if (typeof value !== 'number' || !Number.isInteger(value)) throw refuse()
			if (schema.minimum !== undefined && value < schema.minimum) throw refuse()
			if (schema.maximum !== undefined && value > schema.maximum) throw refuse()
			return
		}
		case 'boolean':
			if (typeof value !== 'boolean') throw refuse()
			return
		case 'array': {
			if (!Array.isArray(value)) throw refuse()
			if (schema.minItems !== undefined && value.length < schema.minItems) throw refuse()
			if (schema.maxItems !== undefined && value.length > schema.maxItems) throw refuse()
			value.forEach((item, index) => {
				check(method, `${path}[${index}]`, schema.items, item)
			})
			return
		}
		case 'object':
			checkObject(method, path, schema, value)
	}
}

function checkObject(method: string, path: string, schema: ToolObjectSchema, value: unknown): void {
	const at = (key: string) => (path === '' ? key : `${path}.${key}`)
	if (!isRecord(value)) {
		throw new SandboxArgumentError(method, path || 'arguments', 'an object', describeValue(value))
	}
	const keys = Object.keys(value)
	if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
		throw new SandboxArgumentError(
			method,
			path || 'arguments',
			`an object of at most ${schema.maxProperties} properties`,
			`${keys.length} properties`,
		)
	}
	for (const key of schema.required ?? []) {
		if (value[key] === undefined) {
			throw new SandboxArgumentError(method, at(key), 'present', 'nothing')
		}
	}
	for (const key of keys) {
		const property = schema.properties[key] ?? schema.additionalProperties
		if (property === false) {
			throw new SandboxArgumentError(method, at(key), 'no such argument', 'an unknown argument')
		}
		// `undefined` is an absent optional argument; an explicit `null` is a value and refused.
		if (value[key] !== undefined) check(method, at(key), property, value[key])
	}
}

/** The arguments, checked against `schema`; refused with `SandboxArgumentError` naming the path. */
export function validateToolArguments(
	method: string,
	schema: ToolObjectSchema,
	args: unknown,
): ToolArguments {
	const value = args === undefined ? {} : args
	checkObject(method, '', schema, value)
	return value as ToolArguments
}

/** A validated string argument, or undefined when it was left out. */
export function stringArgument(args: ToolArguments, key: string): string | undefined {
	const value = args[key]
	return typeof value === 'string' ? value : undefined
}

/** A validated integer argument, or `fallback` when it was left out. */
export function integerArgument(args: ToolArguments, key: string, fallback: number): number {
	const value = args[key]
	return typeof value === 'number' ? value : fallback
}

/** An optional integer argument. */
export function optionalIntegerArgument(args: ToolArguments, key: string): number | undefined {
	const value = args[key]
	return typeof value === 'number' ? value : undefined
}

export function booleanArgument(args: ToolArguments, key: string, fallback: boolean): boolean {
	const value = args[key]
	return typeof value === 'boolean' ? value : fallback
}

export function stringArrayArgument(args: ToolArguments, key: string): string[] | undefined {
	const value = args[key]
	return Array.isArray(value) ? value.filter((item) => typeof item === 'string') : undefined
}

export function stringMapArgument(
	args: ToolArguments,
	key: string,
): Record<string, string> | undefined {
	const value = args[key]
	if (!isRecord(value)) return undefined
	const map: Record<string, string> = {}
	for (const [name, item] of Object.entries(value)) if (typeof item === 'string') map[name] = item
	return map
}
