import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	isWithin,
	lexicalJail,
	MISSING_PATH,
	PATH_ESCAPES_WORKSPACE,
	resolveReadablePath,
	resolveWorkspaceDirectory,
	resolveWritablePath,
} from '../../../src/agent/files/jail.js'
import { OpRefusal } from '../../../src/agent/handler/op-refusal.js'

describe('isWithin', () => {
	it.each([
		['/ws', '/ws', true],
		['/ws', '/ws/a/b', true],
		['/ws', '/wsx', false],
		['/ws', '/', false],
		['/ws', '/ws/..x', true],
		['/', '/etc', true],
	])('root %s contains %s: %s', (root, candidate, expected) => {
		expect(isWithin(root, candidate)).toBe(expected)
	})
})

describe('lexicalJail', () => {
	const config = { workspace: '/ws', readRoots: ['/data'], writeRoots: ['/out'] }
	it.each([
		['a/b.txt', 'read', '/ws/a/b.txt', true],
		['/ws/a/../b', 'read', '/ws/b', true],
		['../etc/passwd', 'read', '/etc/passwd', false],
		['a/../../etc', 'read', '/etc', false],
		['/ws/../etc/passwd', 'read', '/etc/passwd', false],
		['/etc/passwd', 'read', '/etc/passwd', false],
		['/data/x', 'read', '/data/x', true],
		['/data/x', 'write', '/data/x', false],
		['/out/x', 'write', '/out/x', true],
		['/out/x', 'read', '/out/x', false],
		['/wsx/y', 'read', '/wsx/y', false],
	] as const)('%s for %s resolves to %s (admitted: %s)', (path, access, resolved, admitted) => {
		const result = lexicalJail(config, path, access)
		expect(result.path).toBe(resolved)
		expect(result.roots.length > 0).toBe(admitted)
	})

	it('admits nothing for an empty path or one carrying a NUL byte', () => {
		expect(lexicalJail(config, '', 'read').roots).toEqual([])
		expect(lexicalJail(config, 'a\0b', 'read').roots).toEqual([])
	})
})

describe('the jail against a real filesystem', () => {
	let dir: string
	let config: { workspace: string; readRoots: string[]; writeRoots: string[] }

	beforeAll(() => {
		dir = mkdtempSync(join(tmpdir(), 'namzu-jail-'))
		const workspace = join(dir, 'ws')
		mkdirSync(join(workspace, 'sub'), { recursive: true })
		mkdirSync(join(dir, 'outside'))
		mkdirSync(join(dir, 'extra'))
		writeFileSync(join(dir, 'outside', 'secret'), 'x')
		writeFileSync(join(dir, 'extra', 'data'), 'x')
		symlinkSync(join(dir, 'outside'), join(workspace, 'escape-dir'))
		symlinkSync(join(dir, 'outside', 'secret'), join(workspace, 'escape-file'))
		symlinkSync(join(workspace, 'sub'), join(workspace, 'inner-link'))
		symlinkSync('loop-b', join(workspace, 'loop-a'))
		symlinkSync('loop-a', join(workspace, 'loop-b'))
		config = { workspace, readRoots: [join(dir, 'extra')], writeRoots: [] }
	})
	afterAll(() => rmSync(dir, { recursive: true, force: true }))

	function refusal(run: () => unknown): OpRefusal | undefined {
		try {
			run()
			return undefined
		} catch (error) {
			if (error instanceof OpRefusal) return error
			throw error
		}
	}

	it('resolves a relative path under the workspace', () => {
		expect(resolveReadablePath(config, 'sub/file')).toBe(join(config.workspace, 'sub/file'))
		expect(resolveWritablePath(config, 'new/deep/file')).toBe(
			join(config.workspace, 'new/deep/file'),
		)
	})

	it('refuses a relative .. escape with path_escapes_workspace and a message naming the path', () => {
		const error = refusal(() => resolveReadablePath(config, '../outside/secret'))
		expect(error?.error).toBe(PATH_ESCAPES_WORKSPACE)
		expect(error?.message).toBe('path escapes the workspace: ../outside/secret')
	})

	it('refuses an absolute path outside every root', () => {
		expect(refusal(() => resolveReadablePath(config, join(dir, 'outside', 'secret')))?.error).toBe(
			PATH_ESCAPES_WORKSPACE,
		)
	})

	it.each([
		['read', 'escape-file'],
		['read', 'escape-dir/secret'],
		['write', 'escape-file'],
		['write', 'escape-dir/new-file'],
		['write', 'escape-dir/missing/deeper/file'],
	] as const)('refuses a %s through a symlink that leads out (%s)', (access, path) => {
		const resolve = access === 'read' ? resolveReadablePath : resolveWritablePath
		expect(refusal(() => resolve(config, path))?.error).toBe(PATH_ESCAPES_WORKSPACE)
	})

	it('admits a symlink that stays inside the workspace', () => {
		expect(resolveReadablePath(config, 'inner-link/x')).toBe(join(config.workspace, 'inner-link/x'))
	})

	it('refuses a symlink loop rather than guessing', () => {
		expect(refusal(() => resolveReadablePath(config, 'loop-a'))?.error).toBe(PATH_ESCAPES_WORKSPACE)
	})

	it('admits an absolute path under a read root for reads but not for writes', () => {
		const path = join(dir, 'extra', 'data')
		expect(resolveReadablePath(config, path)).toBe(path)
		expect(refusal(() => resolveWritablePath(config, path))?.error).toBe(PATH_ESCAPES_WORKSPACE)
	})

	it('admits an absolute path under a write root for writes', () => {
		const writeConfig = { ...config, writeRoots: [join(dir, 'extra')] }
		const path = join(dir, 'extra', 'new')
		expect(resolveWritablePath(writeConfig, path)).toBe(path)
	})

	it('refuses an absent, empty or non-string path as missing_path', () => {
		expect(refusal(() => resolveReadablePath(config, 42))?.error).toBe(MISSING_PATH)
		expect(refusal(() => resolveReadablePath(config, undefined))?.error).toBe(MISSING_PATH)
		expect(refusal(() => resolveWritablePath(config, ''))?.error).toBe(MISSING_PATH)
	})

	it('resolves a working directory to the workspace by default and jails an explicit one', () => {
		expect(resolveWorkspaceDirectory(config, undefined)).toBe(config.workspace)
		expect(resolveWorkspaceDirectory(config, 'sub')).toBe(join(config.workspace, 'sub'))
		expect(refusal(() => resolveWorkspaceDirectory(config, 'escape-dir'))?.error).toBe(
			PATH_ESCAPES_WORKSPACE,
		)
	})
})
