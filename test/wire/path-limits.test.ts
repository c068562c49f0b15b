import { describe, expect, it } from 'vitest'
import {
	describePathLimitViolation,
	MAX_PATH_BYTES,
	MAX_PATH_COMPONENT_BYTES,
	pathLimitViolation,
} from '../../src/wire/path-limits.js'

/** A path of exactly `bytes` UTF-8 bytes made of `component`-byte components. */
function pathOf(bytes: number, component = 100): string {
	const parts: string[] = []
	let length = 0
	while (length < bytes) {
		const take = Math.min(component, bytes - length - (parts.length > 0 ? 1 : 0))
		parts.push('a'.repeat(Math.max(take, 1)))
		length = parts.join('/').length
	}
	return parts.join('/')
}

describe('pathLimitViolation', () => {
	it.each([
		['a short relative path', 'a/b.txt'],
		['an absolute path', '/workspace/a'],
		['exactly the byte limit', pathOf(MAX_PATH_BYTES)],
		['a component of exactly the limit', `dir/${'c'.repeat(MAX_PATH_COMPONENT_BYTES)}/x`],
		['a multi-byte component at the limit (85 × 3 bytes)', '€'.repeat(85)],
		['empty components (a//b, a trailing /)', 'a//b/'],
	])('admits %s', (_title, path) => {
		expect(pathLimitViolation(path)).toBeUndefined()
	})

	it.each([
		['one byte over the limit', pathOf(MAX_PATH_BYTES + 1), { kind: 'too-long', bytes: 4097 }],
		[
			'under the limit in characters but over it in UTF-8 bytes',
			'é'.repeat(2049),
			{ kind: 'too-long', bytes: 4098 },
		],
		['a 100 KB path', 'a/'.repeat(51_200), { kind: 'too-long', bytes: 102_400 }],
		[
			'a component one byte over',
			`dir/${'c'.repeat(MAX_PATH_COMPONENT_BYTES + 1)}`,
			{ kind: 'component-too-long', bytes: 256 },
		],
		[
			'a multi-byte component over (86 × 3 bytes)',
			`x/${'€'.repeat(86)}/y`,
			{ kind: 'component-too-long', bytes: 258 },
		],
		['a NUL byte', 'a\0b', { kind: 'contains-nul' }],
		[
			'a NUL byte in an over-long path (NUL named first)',
			`${'a'.repeat(5000)}\0`,
			{ kind: 'contains-nul' },
		],
	])('refuses %s', (_title, path, violation) => {
		expect(pathLimitViolation(path)).toEqual(violation)
	})
})

describe('describePathLimitViolation', () => {
	it.each([
		[{ kind: 'too-long', bytes: 5000 } as const, 'at most 4096 bytes (UTF-8)', '5000 bytes'],
		[
			{ kind: 'component-too-long', bytes: 300 } as const,
			'made of components of at most 255 bytes (UTF-8)',
			'a component of 300 bytes',
		],
		[{ kind: 'contains-nul' } as const, 'free of NUL bytes', 'a string containing a NUL byte'],
	])('%j', (violation, expected, received) => {
		expect(describePathLimitViolation(violation)).toEqual({ expected, received })
	})
})
