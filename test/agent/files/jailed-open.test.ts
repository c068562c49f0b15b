/**
 * The check-then-open race, made deterministic: the jail's check runs (resolveJailedPath), then the
 * test swaps a component for a symlink to a directory outside the workspace, then the op's open
 * runs — and the verification of what was actually opened refuses it. Real files, real
 * descriptors; each attack beside the same steps without the swap.
 */
import {
	closeSync,
	constants,
	existsSync,
	mkdirSync,
	mkdtempSync,
	openSync,
	readdirSync,
	readFileSync,
	renameSync,
	rmSync,
	symlinkSync,
	unlinkSync,
	writeFileSync,
} from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { commitTemp } from '../../../src/agent/files/durable-commit.js'
import { PATH_ESCAPES_WORKSPACE, resolveJailedPath } from '../../../src/agent/files/jail.js'
import {
	assertDescriptorWithin,
	JailedDirectory,
	openJailedFile,
} from '../../../src/agent/files/jailed-open.js'
import { OpRefusal } from '../../../src/agent/handler/op-refusal.js'

let dir: string
let workspace: string
let outside: string
let config: { workspace: string; readRoots: string[]; writeRoots: string[] }

beforeEach(() => {
	dir = mkdtempSync(join(tmpdir(), 'namzu-swap-'))
	workspace = join(dir, 'ws')
	outside = join(dir, 'outside')
	mkdirSync(join(workspace, 'sub'), { recursive: true })
	mkdirSync(outside)
	writeFileSync(join(workspace, 'sub', 'file.txt'), 'inside')
	writeFileSync(join(outside, 'file.txt'), 'SECRET')
	config = { workspace, readRoots: [], writeRoots: [] }
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** Replaces `path` (a directory or file) by a symlink to `target`. */
function swapForLink(path: string, target: string): void {
	renameSync(path, `${path}.moved`)
	symlinkSync(target, path)
}

async function refusalOf(run: () => Promise<unknown>): Promise<string | undefined> {
	try {
		await run()
		return undefined
	} catch (error) {
		if (error instanceof OpRefusal) return error.error
		throw error
	}
}

describe('assertDescriptorWithin, on real descriptors', () => {
	it('refuses a descriptor of a file outside the root and admits one inside', () => {
		const outsideFd = openSync(join(outside, 'file.txt'), 'r')
		const insideFd = openSync(join(workspace, 'sub', 'file.txt'), 'r')
		try {
			expect(() => assertDescriptorWithin(outsideFd, workspace, 'x')).toThrow(
				expect.objectContaining({
					error: PATH_ESCAPES_WORKSPACE,
					message: 'path escapes the workspace: x',
				}),
			)
			expect(() => assertDescriptorWithin(insideFd, workspace, 'x')).not.toThrow()
		} finally {
			closeSync(outsideFd)
			closeSync(insideFd)
		}
	})

	it('follows the file, not the name: a file moved out after its open is refused', () => {
		const fd = openSync(join(workspace, 'sub', 'file.txt'), 'r')
		try {
			renameSync(join(workspace, 'sub', 'file.txt'), join(outside, 'moved.txt'))
			expect(() => assertDescriptorWithin(fd, workspace, 'x')).toThrow(OpRefusal)
		} finally {
			closeSync(fd)
		}
	})
})

describe('reads: a component swapped between the check and the open', () => {
	it('positive control: without a swap the file opens and reads', async () => {
		const jailed = resolveJailedPath(config, 'sub/file.txt', 'read')
		const handle = await openJailedFile(jailed, 'sub/file.txt', constants.O_RDONLY)
		expect((await handle.readFile()).toString()).toBe('inside')
		await handle.close()
	})

	it('a directory swapped for a link out is refused after the open, before a byte is read', async () => {
		const jailed = resolveJailedPath(config, 'sub/file.txt', 'read')
		swapForLink(join(workspace, 'sub'), outside)
		// The plain open the jail used to be followed by would read the secret:
		expect(readFileSync(jailed.path, 'utf8')).toBe('SECRET')
		expect(await refusalOf(() => openJailedFile(jailed, 'sub/file.txt', constants.O_RDONLY))).toBe(
			PATH_ESCAPES_WORKSPACE,
		)
	})

	it('a last component swapped for a link out is refused (O_NOFOLLOW), not followed', async () => {
		const jailed = resolveJailedPath(config, 'sub/file.txt', 'read')
		expect(jailed.finalIsLink).toBe(false)
		swapForLink(join(workspace, 'sub', 'file.txt'), join(outside, 'file.txt'))
		expect(await refusalOf(() => openJailedFile(jailed, 'sub/file.txt', constants.O_RDONLY))).toBe(
			PATH_ESCAPES_WORKSPACE,
		)
	})

	it('a link inside the workspace that the jail admitted is still followed', async () => {
		symlinkSync(join(workspace, 'sub', 'file.txt'), join(workspace, 'alias.txt'))
		const jailed = resolveJailedPath(config, 'alias.txt', 'read')
		expect(jailed.finalIsLink).toBe(true)
		const handle = await openJailedFile(jailed, 'alias.txt', constants.O_RDONLY)
		expect((await handle.readFile()).toString()).toBe('inside')
		await handle.close()
	})
})

describe('writes: a component swapped between the check and the write', () => {
	it('positive control: parents are created inside and the held directory verifies', async () => {
		const jailed = resolveJailedPath(config, 'new/deeper/file.txt', 'write')
		const held = await JailedDirectory.open(dirname(jailed.path), jailed.realRoot, 'x', {
			create: true,
		})
		held.verify()
		await held.close()
		expect(existsSync(join(workspace, 'new', 'deeper'))).toBe(true)
	})

	it('an existing parent swapped for a link out: nothing is created outside', async () => {
		const jailed = resolveJailedPath(config, 'sub/new.txt', 'write')
		swapForLink(join(workspace, 'sub'), outside)
		expect(
			await refusalOf(() =>
				JailedDirectory.open(dirname(jailed.path), jailed.realRoot, 'sub/new.txt', {
					create: true,
				}),
			),
		).toBe(PATH_ESCAPES_WORKSPACE)
		expect(readdirSync(outside)).toEqual(['file.txt'])
	})

	it('a missing parent planted as a link out before mkdir -p: nothing is created outside', async () => {
		const jailed = resolveJailedPath(config, 'planted/deeper/file.txt', 'write')
		symlinkSync(outside, join(workspace, 'planted'))
		expect(
			await refusalOf(() =>
				JailedDirectory.open(dirname(jailed.path), jailed.realRoot, 'x', { create: true }),
			),
		).toBe(PATH_ESCAPES_WORKSPACE)
		expect(readdirSync(outside)).toEqual(['file.txt'])
	})

	it('a held directory moved out of the workspace before the rename: the rename never happens', async () => {
		const jailed = resolveJailedPath(config, 'sub/target.txt', 'write')
		const held = await JailedDirectory.open(dirname(jailed.path), jailed.realRoot, 'x', {
			create: false,
		})
		const handle = await open(held.entry('temp.part'), 'wx')
		await handle.write('payload')
		// Between writing and renaming into place, the directory leaves the jail.
		renameSync(join(workspace, 'sub'), join(outside, 'sub'))
		const refusal = await refusalOf(() =>
			commitTemp(
				handle,
				{ directory: held, name: 'temp.part' },
				{ directory: held, name: 'target.txt' },
			),
		)
		await held.close()
		expect(refusal).toBe(PATH_ESCAPES_WORKSPACE)
		expect(existsSync(join(outside, 'sub', 'target.txt'))).toBe(false)
		expect(readFileSync(join(outside, 'sub', 'temp.part'), 'utf8')).toBe('payload')
		unlinkSync(join(outside, 'sub', 'temp.part'))
	})

	it('positive control: the same commit without the move puts the file into place', async () => {
		const jailed = resolveJailedPath(config, 'sub/target.txt', 'write')
		const held = await JailedDirectory.open(dirname(jailed.path), jailed.realRoot, 'x', {
			create: false,
		})
		const handle = await open(held.entry('temp.part'), 'wx')
		await handle.write('payload')
		await commitTemp(
			handle,
			{ directory: held, name: 'temp.part' },
			{ directory: held, name: 'target.txt' },
		)
		await held.close()
		expect(readFileSync(join(workspace, 'sub', 'target.txt'), 'utf8')).toBe('payload')
		expect(existsSync(join(workspace, 'sub', 'temp.part'))).toBe(false)
	})
})
