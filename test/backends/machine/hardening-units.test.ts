import { describe, expect, it } from 'vitest'
import {
	emptyClaims,
	hostClaimsBelongTo,
	parseHostClaims,
	type SandboxHostClaims,
	uidLockPath,
	workspaceLockPath,
} from '../../../src/backends/machine/claims/host-claims.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	inUidRange,
	withSandboxIdentity,
} from '../../../src/backends/machine/claims/sandbox-identity.js'
import { stdioCovering } from '../../../src/backends/machine/launch/launch-descriptors.js'
import { sourceKey } from '../../../src/backends/machine/launch/runtime-cache.js'
import { LocalPathOptionError } from '../../../src/backends/machine/machine-errors.js'
import {
	canServeFromPool,
	resolveMachineSandboxSpec,
} from '../../../src/backends/machine/spec/machine-sandbox-spec.js'
import {
	checkHiddenPath,
	checkReadOnlyPath,
	validatePathList,
} from '../../../src/backends/machine/spec/path-options.js'
import {
	formatOwnershipEntry,
	parseOwnershipEntry,
} from '../../../src/backends/machine/workspace/ownership-record.js'
import {
	maySearch,
	mountPointsUnder,
} from '../../../src/backends/machine/workspace/staging-mounts.js'

function refusalOf(run: () => unknown): LocalPathOptionError {
	try {
		run()
	} catch (error) {
		if (error instanceof LocalPathOptionError) return error
		throw error
	}
	throw new Error('expected a refusal')
}

describe('readOnlyPaths / hiddenPaths validation', () => {
	it('normalizes and de-duplicates absolute paths', () => {
		expect(validatePathList('readOnlyPaths', ['/opt//node/', '/opt/node', '/a/./b'])).toEqual([
			'/opt/node',
			'/a/b',
		])
		expect(validatePathList('hiddenPaths', undefined)).toEqual([])
	})

	it.each([
		['readOnlyPaths', '/opt/x', 'not-a-list', 'readOnlyPaths'],
		['readOnlyPaths', [7], 'not-a-string', 'readOnlyPaths[0]'],
		['hiddenPaths', ['/ok', 'relative/x'], 'not-absolute', 'hiddenPaths[1]'],
		['readOnlyPaths', ['/opt/../etc'], 'dot-dot', 'readOnlyPaths[0]'],
		['readOnlyPaths', ['/opt/\0x'], 'nul', 'readOnlyPaths[0]'],
		['hiddenPaths', ['//'], 'root', 'hiddenPaths[0]'],
	] as const)('%s %j is refused as %s naming %s', (name, value, refusal, parameter) => {
		const error = refusalOf(() => validatePathList(name, value))
		expect(error.refusal).toBe(refusal)
		expect(error.parameter).toBe(parameter)
		expect(error.message).toContain(parameter)
	})

	it.each([
		['the state directory', '/var/lib/state', 'state-dir'],
		['inside it', '/var/lib/state/namzu-sbx-1/control', 'state-dir'],
		['an ancestor of it', '/var/lib', 'state-dir'],
		['what resolves to /', '/', 'root'],
	])('a read-only path that is %s is refused', (_, real, refusal) => {
		const error = refusalOf(() =>
			checkReadOnlyPath('readOnlyPaths[0]', '/given', real, '/var/lib/state'),
		)
		expect(error.refusal).toBe(refusal)
	})

	it('accepts a read-only path beside the state directory', () => {
		expect(() =>
			checkReadOnlyPath('p', '/var/lib/other', '/var/lib/other', '/var/lib/state'),
		).not.toThrow()
	})

	it('refuses hiding the workspace or a directory holding it', () => {
		expect(refusalOf(() => checkHiddenPath('hiddenPaths[0]', '/srv', '/srv/w')).refusal).toBe(
			'workspace',
		)
		expect(() => checkHiddenPath('hiddenPaths[0]', '/srv/w/secret', '/srv/w')).not.toThrow()
	})

	it('through create(): a lexically bad entry is refused before anything starts', () => {
		const error = refusalOf(() => resolveMachineSandboxSpec({ readOnlyPaths: ['rel'] }, {}))
		expect(error.parameter).toBe('readOnlyPaths[0]')
	})

	it.each([
		['no paths', {}, true],
		['readOnlyPaths', { readOnlyPaths: ['/opt/node'] }, false],
		['hiddenPaths', { hiddenPaths: ['/etc/hosts'] }, false],
	])('a request with %s can be served from the pool: %s', (_, config, expected) => {
		expect(
			canServeFromPool(resolveMachineSandboxSpec({}, {}), resolveMachineSandboxSpec(config, {})),
		).toBe(expected)
	})
})

describe('sandbox identity', () => {
	it('defaults to 65536 uids from 0x70000000', () => {
		expect(DEFAULT_SANDBOX_UID_RANGE).toEqual({ first: 1_879_048_192, count: 65_536 })
		expect(inUidRange(1_879_048_192, DEFAULT_SANDBOX_UID_RANGE)).toBe(true)
		expect(inUidRange(1_879_048_192 + 65_536, DEFAULT_SANDBOX_UID_RANGE)).toBe(false)
		expect(inUidRange(0, DEFAULT_SANDBOX_UID_RANGE)).toBe(false)
	})

	it('starts bwrap through setpriv with a per-sandbox uid, and directly as the host user', () => {
		const command = ['/usr/bin/bwrap', '--x']
		expect(
			withSandboxIdentity(
				'/usr/bin/setpriv',
				{ mode: 'per-sandbox-uid', uid: 7e4, gid: 7e4, lockPath: '/l' },
				command,
			),
		).toEqual([
			'/usr/bin/setpriv',
			'--reuid=70000',
			'--regid=70000',
			'--clear-groups',
			'--',
			...command,
		])
		expect(
			withSandboxIdentity('/usr/bin/setpriv', { mode: 'host-user', uid: 1000, gid: 1000 }, command),
		).toEqual(command)
	})

	it.each([
		[{ uid: 5, gid: 5, mode: 0o700 }, true],
		[{ uid: 0, gid: 5, mode: 0o710 }, true],
		[{ uid: 0, gid: 0, mode: 0o710 }, false],
		[{ uid: 0, gid: 0, mode: 0o711 }, true],
		[{ uid: 5, gid: 0, mode: 0o077 }, false],
	])('maySearch(%j) by uid 5 ⇒ %s', (info, expected) => {
		expect(maySearch(info, { uid: 5, gid: 5 })).toBe(expected)
	})
})

describe('ownership record', () => {
	it('round-trips raw names, spaces included', () => {
		const path = Buffer.from([0x61, 0x20, 0x62, 0xff, 0x2f, 0x63])
		const bytes = formatOwnershipEntry({ uid: 1234, gid: 4321, path })
		expect(parseOwnershipEntry(bytes.subarray(0, bytes.length - 1))).toEqual({
			uid: 1234,
			gid: 4321,
			path,
		})
	})

	it.each([
		['no path', '12 34 '],
		['an absolute path', '12 34 /etc/passwd'],
		['a .. component', '12 34 a/../../etc'],
		['an empty component', '12 34 a//b'],
		['a non-numeric uid', 'x 34 a'],
		['a uid beyond 32 bits', '99999999999 34 a'],
	])('refuses an entry with %s', (_, text) => {
		expect(parseOwnershipEntry(Buffer.from(text))).toBeUndefined()
	})
})

describe('host claims', () => {
	const root = '/var/lib/s/namzu-sbx-0123456789ab'
	const claims: SandboxHostClaims = {
		...emptyClaims('0123456789ab', root, { pid: 4242, startTime: '987654' }),
		identity: {
			uid: 1_879_048_200,
			gid: 1_879_048_200,
			lockPath: uidLockPath(root, 1_879_048_200),
		},
		workspace: {
			path: '/srv/project',
			dev: 2049,
			ino: 77,
			ownerUid: 1000,
			ownerGid: 1000,
			recordPath: `${root}/workspace-owners`,
			lockPath: workspaceLockPath(root, 2049, 77),
		},
		stagingMounts: [`${root}/mnt/workspace`],
		cgroupDirs: ['/sys/fs/cgroup/memory/user.slice/namzu-sbx-0123456789ab'],
		launcher: { pid: 4343, startTime: '987700' },
		runtimeFiles: ['/var/lib/s/namzu-runtime-0/node-1-2-3-4'],
	}

	it('parses what it writes and belongs to its sandbox', () => {
		const parsed = parseHostClaims(JSON.parse(JSON.stringify(claims)))
		expect(parsed).toEqual(claims)
		expect(parsed && hostClaimsBelongTo(parsed, '0123456789ab', root)).toBe(true)
	})

	it('a sized workspace belongs to its sandbox only at <stateRoot>/workspace, beside a handed-over directory too', () => {
		const { workspace: _caller, ...ephemeral } = claims
		const sized: SandboxHostClaims = { ...ephemeral, workspaceDisk: `${root}/workspace` }
		expect(parseHostClaims(JSON.parse(JSON.stringify(sized)))).toEqual(sized)
		expect(hostClaimsBelongTo(sized, '0123456789ab', root)).toBe(true)
		expect(hostClaimsBelongTo({ ...sized, workspaceDisk: '/home' }, '0123456789ab', root)).toBe(
			false,
		)
		// A handed-over directory (a container's writable hostDir) beside a sized workspace is ours.
		const both: SandboxHostClaims = { ...claims, workspaceDisk: `${root}/workspace` }
		expect(parseHostClaims(JSON.parse(JSON.stringify(both)))).toEqual(both)
		expect(hostClaimsBelongTo(both, '0123456789ab', root)).toBe(true)
		expect(
			hostClaimsBelongTo({ ...both, workspaceDisk: '/srv/project' }, '0123456789ab', root),
		).toBe(false)
		expect(parseHostClaims({ ...sized, workspaceDisk: 7 })).toBeUndefined()
	})

	it.each([
		['another id', { id: 'ffffffffffff' }],
		['a uid lock elsewhere', { identity: { ...claims.identity, lockPath: '/etc/passwd' } }],
		['a workspace record elsewhere', { workspace: { ...claims.workspace, recordPath: '/tmp/x' } }],
		['a workspace that is /', { workspace: { ...claims.workspace, path: '/' } }],
		[
			'a workspace holding the state directory',
			{ workspace: { ...claims.workspace, path: '/var' } },
		],
		['a staging point outside the state root', { stagingMounts: ['/home'] }],
		['a staging point escaping it', { stagingMounts: [`${root}/mnt/../../../home`] }],
		['another sandbox’s cgroup', { cgroupDirs: ['/sys/fs/cgroup/memory/namzu-sbx-ffffffffffff'] }],
		['a cgroup escaping upwards', { cgroupDirs: ['/sys/fs/cgroup/../namzu-sbx-0123456789ab'] }],
		['a relative cgroup', { cgroupDirs: ['memory/namzu-sbx-0123456789ab'] }],
	])('refuses a record naming %s', (_, override) => {
		const tampered = { ...claims, ...override } as SandboxHostClaims
		expect(hostClaimsBelongTo(tampered, '0123456789ab', root)).toBe(false)
	})

	it('refuses malformed records', () => {
		expect(parseHostClaims({ ...claims, version: 2 })).toBeUndefined()
		expect(parseHostClaims({ ...claims, identity: { uid: -1 } })).toBeUndefined()
		expect(parseHostClaims({ ...claims, stagingMounts: [1] })).toBeUndefined()
		expect(parseHostClaims({ ...claims, owner: { pid: 7, startTime: 'x' } })).toBeUndefined()
		expect(parseHostClaims({ ...claims, cgroupDirs: '/sys/fs/cgroup' })).toBeUndefined()
		expect(parseHostClaims({ ...claims, launcher: { pid: 0, startTime: '1' } })).toBeUndefined()
		expect(parseHostClaims({ ...claims, runtimeFiles: [null] })).toBeUndefined()
	})
})

describe('launch descriptors', () => {
	it('covers every inheritable host descriptor beyond the meant ones with the cover', () => {
		expect(stdioCovering(['ignore', 'ignore', 'pipe', 9], [3, 5, 40], 99)).toEqual([
			'ignore',
			'ignore',
			'pipe',
			9,
			'ignore',
			99,
			...Array.from({ length: 34 }, () => 'ignore'),
			99,
		])
		expect(stdioCovering(['ignore', 'ignore', 'pipe'], [], 99)).toEqual([
			'ignore',
			'ignore',
			'pipe',
		])
	})
})

describe('mount points and source keys', () => {
	const mountinfo = [
		'22 1 254:0 / / rw - ext4 /dev/vda rw',
		'46 27 254:0 /root/p /var/s/namzu-sbx-a/mnt/work\\040space rw - ext4 /dev/vda rw',
		'47 27 254:0 /x /var/s/namzu-sbx-ab rw - ext4 /dev/vda rw',
	].join('\n')

	it('lists mount points at or below a prefix, unescaped, and not siblings sharing its start', () => {
		expect(mountPointsUnder(mountinfo, '/var/s/namzu-sbx-a')).toEqual([
			'/var/s/namzu-sbx-a/mnt/work space',
		])
	})

	it('keys a runtime copy by device, inode, size and mtime', () => {
		expect(sourceKey({ dev: 16, ino: 255, size: 10, mtimeMs: 4096.7 })).toBe('10-ff-a-1000')
	})
})
