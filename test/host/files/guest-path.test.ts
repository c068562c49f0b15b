import { describe, expect, it } from 'vitest'
import {
	shownGuestEntries,
	shownGuestEntry,
	shownGuestPath,
	shownGuestWalk,
} from '../../../src/host/files/guest-path.js'

// The local tier's guest sees the workspace at its host path; the others at a guest path.
const HOST_ROOT = '/tmp/namzu-sbx-ab12/workspace'

describe('shownGuestPath', () => {
	it.each([
		['/workspace', '/workspace/src/calc.js', 'src/calc.js'],
		['/workspace/', '/workspace/src/calc.js', 'src/calc.js'],
		['/workspace', '/workspace', '.'],
		['/workspace/', '/workspace', '.'],
		['/workspace', '/workspace-other/a.txt', '/workspace-other/a.txt'],
		['/workspace', '/etc/hostname', '/etc/hostname'],
		['/workspace', '/', '/'],
		['/', '/etc/hostname', 'etc/hostname'],
		[HOST_ROOT, `${HOST_ROOT}/src/calc.js`, 'src/calc.js'],
		[HOST_ROOT, `${HOST_ROOT}/.hidden/a b.txt`, '.hidden/a b.txt'],
		[HOST_ROOT, '/tmp/namzu-sbx-ab12/state/x', '/tmp/namzu-sbx-ab12/state/x'],
	])('under root %s, %s shows as %s', (root, guestPath, shown) => {
		expect(shownGuestPath(root, guestPath)).toBe(shown)
	})
})

describe('shownGuestEntry / shownGuestEntries', () => {
	it('rewrites the path and keeps the size', () => {
		expect(shownGuestEntry(HOST_ROOT, { path: `${HOST_ROOT}/a.txt`, size: 3 })).toEqual({
			path: 'a.txt',
			size: 3,
		})
	})

	it.each([
		[[], []],
		[
			[
				{ path: `${HOST_ROOT}/one.txt`, size: 3 },
				{ path: `${HOST_ROOT}/sub/two.bin`, size: 5 },
				{ path: '/opt/tool/bin', size: 0 },
			],
			[
				{ path: 'one.txt', size: 3 },
				{ path: 'sub/two.bin', size: 5 },
				{ path: '/opt/tool/bin', size: 0 },
			],
		],
	])('a listing keeps its order and shows every path as the guest sees it', (given, shown) => {
		expect(shownGuestEntries(HOST_ROOT, given)).toEqual(shown)
	})
})

describe('shownGuestWalk', () => {
	it('shows each walked path and ends the walk under it when the loop is left early', async () => {
		let finished = false
		async function* walk() {
			try {
				yield { path: `${HOST_ROOT}/a.ts`, size: 1 }
				yield { path: `${HOST_ROOT}/b.ts`, size: 2 }
			} finally {
				finished = true
			}
		}
		const seen: string[] = []
		for await (const entry of shownGuestWalk(HOST_ROOT, walk())) {
			seen.push(entry.path)
			break
		}
		expect(seen).toEqual(['a.ts'])
		expect(finished).toBe(true)
	})
})
