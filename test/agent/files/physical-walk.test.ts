/**
 * The physical walk gives the answer `realpath` gives (for what exists) and the nearest existing
 * directory plus the missing names (for what does not), whatever mix of symlinks, `..` in link
 * targets, files in the middle and chains longer than one step it meets.
 */
import {
	closeSync,
	mkdirSync,
	mkdtempSync,
	realpathSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	descriptorPath,
	realpathOfNearest,
	STEP_COMPONENTS,
	SymlinkLoopError,
	walkToNearest,
} from '../../../src/agent/files/physical-walk.js'

let dir: string
const deepNames = Array.from({ length: STEP_COMPONENTS * 2 + 5 }, (_, i) => `d${i}`)
const deep = deepNames.join('/')

beforeAll(() => {
	dir = realpathSync(mkdtempSync(join(tmpdir(), 'namzu-walk-')))
	mkdirSync(join(dir, 'a', 'b', 'c'), { recursive: true })
	mkdirSync(join(dir, deep), { recursive: true })
	writeFileSync(join(dir, 'a', 'file'), 'x')
	symlinkSync('b', join(dir, 'a', 'rel-link'))
	symlinkSync(join(dir, 'a', 'b', 'c'), join(dir, 'abs-link'))
	symlinkSync('../../b', join(dir, 'a', 'b', 'c', 'up-link'))
	symlinkSync('missing-target/x', join(dir, 'a', 'dangling'))
	symlinkSync('loop-2', join(dir, 'loop-1'))
	symlinkSync('loop-1', join(dir, 'loop-2'))
	// A link in the middle of a chain longer than one step.
	symlinkSync(join(dir, ...deepNames.slice(0, 10)), join(dir, 'a', 'to-deep'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('realpathOfNearest', () => {
	it.each([
		['a plain directory', 'a/b/c'],
		['a file', 'a/file'],
		['a relative symlink', 'a/rel-link/c'],
		['an absolute symlink', 'abs-link'],
		['a link whose target climbs with ..', 'abs-link/up-link/c'],
		['a chain longer than two steps', deep],
		['a link into a long chain, then the rest of it', `a/to-deep/${deepNames.slice(10).join('/')}`],
		['.. inside the given path', 'a/b/../b/c'],
	])('agrees with realpath for %s', (_title, relative) => {
		const path = join(dir, relative)
		expect(realpathOfNearest(path)).toBe(realpathSync(path))
	})

	it.each([
		['a missing tail', 'a/b/new/deeper', 'a/b/new/deeper'],
		['a missing tail below a link', 'abs-link/new', 'a/b/c/new'],
		['names below a file', 'a/file/x/y', 'a/file/x/y'],
		['a dangling link (its target is what will be created)', 'a/dangling', 'a/missing-target/x'],
		['a missing tail after a long chain', `${deep}/new`, `${deep}/new`],
	])(
		'gives the nearest real directory plus the missing names for %s',
		(_title, relative, expected) => {
			expect(realpathOfNearest(join(dir, relative))).toBe(join(dir, expected))
		},
	)

	it('refuses a symlink loop', () => {
		expect(() => realpathOfNearest(join(dir, 'loop-1', 'x'))).toThrow(SymlinkLoopError)
	})
})

describe('walkToNearest', () => {
	it('holds the deepest existing directory and lists what is missing below it, in order', () => {
		const nearest = walkToNearest(join(dir, 'a', 'b', 'x', 'y', 'z'))
		try {
			expect(descriptorPath(nearest.fd)).toBe(join(dir, 'a', 'b'))
			expect(nearest.missing).toEqual(['x', 'y', 'z'])
		} finally {
			closeSync(nearest.fd)
		}
	})

	it('holds the target itself when all of it exists', () => {
		const nearest = walkToNearest(join(dir, deep))
		try {
			expect(descriptorPath(nearest.fd)).toBe(join(dir, deep))
			expect(nearest.missing).toEqual([])
		} finally {
			closeSync(nearest.fd)
		}
	})
})
