/**
 * Paths resolved as the container would: each symlink followed inside the image's root, never on
 * the host (a host-side `realpath` of `/bin/sh` answers the host's shell, not the image's).
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { executableInRootfs, resolveInRootfs } from '../../../src/backends/container/rootfs-path.js'

let rootfs = ''

beforeAll(async () => {
	rootfs = await mkdtemp(join(tmpdir(), 'namzu-rootfs-path-'))
	const at = (path: string) => join(rootfs, path)
	await mkdir(at('usr/bin'), { recursive: true })
	await mkdir(at('usr/lib/node'), { recursive: true })
	await mkdir(at('opt'), { recursive: true })
	await writeFile(at('usr/bin/dash'), '#!dash\n', { mode: 0o755 })
	await writeFile(at('usr/bin/data'), 'not a program\n', { mode: 0o644 })
	await writeFile(at('usr/lib/node/node'), '#!node\n', { mode: 0o755 })
	// Debian's merged /usr: /bin -> usr/bin, then sh -> dash.
	await symlink('usr/bin', at('bin'))
	await symlink('dash', at('usr/bin/sh'))
	// Absolute targets are the image's, not the host's.
	await symlink('/usr/lib/node/node', at('usr/bin/node'))
	await symlink('/usr/bin/env', at('usr/bin/hostenv'))
	// `..` stops at the image's root.
	await symlink('../../../../../usr/bin/dash', at('opt/climb'))
	await symlink('loop-b', at('opt/loop-a'))
	await symlink('loop-a', at('opt/loop-b'))
	await symlink('/usr/bin/data/x', at('opt/through-file'))
})

afterAll(async () => {
	await rm(rootfs, { recursive: true, force: true })
})

describe('resolveInRootfs', () => {
	it.each([
		['/bin/sh', '/usr/bin/dash'],
		['bin/sh', '/usr/bin/dash'],
		['/bin/./sh', '/usr/bin/dash'],
		['/usr/bin/node', '/usr/lib/node/node'],
		['/opt/climb', '/usr/bin/dash'],
		['/../../bin/sh', '/usr/bin/dash'],
		['/usr/bin/../bin/sh', '/usr/bin/dash'],
		['/usr/bin/hostenv', undefined],
		['/missing', undefined],
		['/opt/loop-a', undefined],
		['/opt/through-file', undefined],
		['/usr/bin/data/x', undefined],
	])('%s → %s', async (path, expected) => {
		expect(await resolveInRootfs(rootfs, path)).toBe(expected)
	})
})

describe('executableInRootfs', () => {
	it('answers where the container sees the program and where the host reads it', async () => {
		expect(await executableInRootfs(rootfs, '/bin/sh')).toEqual({
			inImage: '/usr/bin/dash',
			onHost: join(rootfs, 'usr/bin/dash'),
		})
	})

	it.each([
		['a file that is not executable', '/usr/bin/data'],
		['a directory', '/usr/bin'],
		['a link to a path only the host has', '/usr/bin/hostenv'],
		['a link loop', '/opt/loop-a'],
	])('answers nothing for %s', async (_what, path) => {
		expect(await executableInRootfs(rootfs, path)).toBeUndefined()
	})
})
