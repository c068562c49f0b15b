import { describe, expect, it } from 'vitest'
import {
	type CgroupGroupPlan,
	cpuQuotaUs,
	groupDirectory,
	limitWrites,
	parseCgroupHierarchies,
	parseCgroupMounts,
	parseProcCgroup,
	planCgroups,
} from '../../../../src/backends/machine/cgroups/cgroup-layout.js'

// As measured on the dev VM: hybrid, v1 memory/pids, cgroup2 with only hugetlb.
const HYBRID_CGROUP = `9:name=systemd:/
8:pids:/
7:blkio:/
4:memory:/process_api/abc
1:cpu:/
0::/
`
const HYBRID_MOUNTINFO = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
const PURE_V2_CGROUP = '0::/user.slice/session-1.scope\n'
const PURE_V2_MOUNTINFO = '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n'

describe('parseProcCgroup', () => {
	it('splits v1 controllers and the unified path, ignoring named hierarchies', () => {
		expect(parseProcCgroup(HYBRID_CGROUP)).toEqual({
			v2: '/',
			v1: { pids: '/', blkio: '/', memory: '/process_api/abc', cpu: '/' },
		})
	})

	it('splits co-mounted controllers', () => {
		expect(parseProcCgroup('3:cpu,cpuacct:/a\n').v1).toEqual({ cpu: '/a', cpuacct: '/a' })
	})
})

describe('parseCgroupMounts', () => {
	it('finds the cgroup2 mount and the v1 hierarchies of interest', () => {
		expect(parseCgroupMounts(HYBRID_MOUNTINFO)).toEqual({
			v2: { mountPoint: '/sys/fs/cgroup/unified', root: '/' },
			v1: {
				cpu: { mountPoint: '/sys/fs/cgroup/cpu', root: '/' },
				memory: { mountPoint: '/sys/fs/cgroup/memory', root: '/' },
				pids: { mountPoint: '/sys/fs/cgroup/pids', root: '/' },
			},
		})
	})

	it('decodes octal escapes in mount points', () => {
		const mounts = parseCgroupMounts('1 2 0:1 / /sys/fs/my\\040cg rw - cgroup2 cgroup2 rw\n')
		expect(mounts.v2?.mountPoint).toBe('/sys/fs/my cg')
	})
})

describe('parseCgroupHierarchies', () => {
	it("keeps each hierarchy's super options, v1 and v2, without rw/ro", () => {
		const hierarchies = parseCgroupHierarchies(
			`${HYBRID_MOUNTINFO}50 23 0:40 / /run/fav rw - cgroup cgroup rw,name=fav,favordynmods\n${PURE_V2_MOUNTINFO}`,
		)
		expect(hierarchies.map(({ version, options }) => ({ version, options }))).toEqual([
			{ version: 1, options: ['cpu'] },
			{ version: 1, options: ['memory'] },
			{ version: 1, options: ['pids'] },
			{ version: 1, options: ['name=systemd'] },
			{ version: 2, options: [] },
			{ version: 1, options: ['name=fav', 'favordynmods'] },
			{ version: 2, options: ['nsdelegate'] },
		])
	})
})

describe('groupDirectory', () => {
	it.each([
		[
			{ mountPoint: '/sys/fs/cgroup/memory', root: '/' },
			'/process_api/abc',
			'/sys/fs/cgroup/memory/process_api/abc',
		],
		[{ mountPoint: '/sys/fs/cgroup/pids', root: '/' }, '/', '/sys/fs/cgroup/pids'],
		[{ mountPoint: '/sys/fs/cgroup', root: '/ns' }, '/ns/a', '/sys/fs/cgroup/a'],
		[{ mountPoint: '/sys/fs/cgroup', root: '/ns' }, '/other', undefined],
	])('%o + %s ⇒ %s', (mount, path, dir) => {
		expect(groupDirectory(mount, path)).toBe(dir)
	})
})

describe('planCgroups', () => {
	const hybrid = {
		membership: parseProcCgroup(HYBRID_CGROUP),
		mounts: parseCgroupMounts(HYBRID_MOUNTINFO),
		v2Controllers: 'hugetlb\n',
		name: 'namzu-sbx-x',
	}

	it('uses v1 memory and pids nested under our own groups when cgroup2 lacks them', () => {
		expect(planCgroups({ ...hybrid, needed: ['memory', 'pids'] })).toEqual({
			ok: true,
			groups: [
				{
					version: 1,
					dir: '/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x',
					parent: '/sys/fs/cgroup/memory/process_api/abc',
					controllers: ['memory'],
				},
				{
					version: 1,
					dir: '/sys/fs/cgroup/pids/namzu-sbx-x',
					parent: '/sys/fs/cgroup/pids',
					controllers: ['pids'],
				},
			],
			v2Parent: '/sys/fs/cgroup/unified',
		})
	})

	it('prefers cgroup2 when it offers the controllers, in one group', () => {
		const plan = planCgroups({
			membership: parseProcCgroup(PURE_V2_CGROUP),
			mounts: parseCgroupMounts(PURE_V2_MOUNTINFO),
			v2Controllers: 'cpuset cpu io memory pids',
			name: 'namzu-sbx-x',
			needed: ['memory', 'pids'],
		})
		expect(plan).toEqual({
			ok: true,
			groups: [
				{
					version: 2,
					dir: '/sys/fs/cgroup/user.slice/session-1.scope/namzu-sbx-x',
					parent: '/sys/fs/cgroup/user.slice/session-1.scope',
					controllers: ['memory', 'pids'],
				},
			],
			v2Parent: '/sys/fs/cgroup/user.slice/session-1.scope',
		})
	})

	it('reports a needed controller that no hierarchy offers instead of skipping it', () => {
		const plan = planCgroups({
			membership: parseProcCgroup(PURE_V2_CGROUP),
			mounts: parseCgroupMounts(PURE_V2_MOUNTINFO),
			v2Controllers: 'cpu memory',
			name: 'n',
			needed: ['memory', 'pids'],
		})
		expect(plan.ok).toBe(false)
		if (!plan.ok) {
			expect(plan.missing).toEqual(['pids'])
			expect(plan.detail).toContain('memory')
		}
	})

	it('shares one group for controllers co-mounted in one v1 hierarchy', () => {
		const plan = planCgroups({
			membership: parseProcCgroup('2:memory,pids:/a\n'),
			mounts: parseCgroupMounts('1 2 0:3 / /cg rw - cgroup cgroup rw,memory,pids\n'),
			name: 'n',
			needed: ['memory', 'pids'],
		})
		expect(plan).toEqual({
			ok: true,
			groups: [{ version: 1, dir: '/cg/a/n', parent: '/cg/a', controllers: ['memory', 'pids'] }],
		})
	})
})

describe('limitWrites', () => {
	const v1Memory: CgroupGroupPlan = {
		version: 1,
		dir: '/m/g',
		parent: '/m',
		controllers: ['memory'],
	}
	const v2Both: CgroupGroupPlan = {
		version: 2,
		dir: '/u/g',
		parent: '/u',
		controllers: ['memory', 'pids'],
	}

	it('writes the v1 memory limit before the optional memsw limit', () => {
		expect(limitWrites(v1Memory, { memoryLimitMb: 64 })).toEqual([
			{ file: '/m/g/memory.limit_in_bytes', value: String(64 * 1024 * 1024), optional: false },
			{ file: '/m/g/memory.memsw.limit_in_bytes', value: String(64 * 1024 * 1024), optional: true },
		])
	})

	it('writes memory.max, no swap and pids.max on cgroup2', () => {
		expect(limitWrites(v2Both, { memoryLimitMb: 1, pidsMax: 40 })).toEqual([
			{ file: '/u/g/memory.max', value: '1048576', optional: false },
			{ file: '/u/g/memory.swap.max', value: '0', optional: true },
			{ file: '/u/g/pids.max', value: '40', optional: false },
		])
	})

	it('writes an explicit v1 cpu.shares, and the period before the quota for a cpu limit', () => {
		const v1Cpu: CgroupGroupPlan = { version: 1, dir: '/c/g', parent: '/c', controllers: ['cpu'] }
		expect(
			limitWrites(v1Cpu, { cpuShares: 1024, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000 }),
		).toEqual([
			{ file: '/c/g/cpu.shares', value: '1024', optional: false },
			{ file: '/c/g/cpu.cfs_period_us', value: '100000', optional: false },
			{ file: '/c/g/cpu.cfs_quota_us', value: '50000', optional: false },
		])
	})

	it('writes cpu.weight and cpu.max on cgroup2', () => {
		const v2Cpu: CgroupGroupPlan = { version: 2, dir: '/u/g', parent: '/u', controllers: ['cpu'] }
		expect(
			limitWrites(v2Cpu, { cpuWeight: 100, cpuQuotaUs: 150_000, cpuPeriodUs: 100_000 }),
		).toEqual([
			{ file: '/u/g/cpu.weight', value: '100', optional: false },
			{ file: '/u/g/cpu.max', value: '150000 100000', optional: false },
		])
	})
})

describe('cpuQuotaUs', () => {
	it.each([
		[1, 100_000],
		[0.5, 50_000],
		[2.25, 225_000],
		[0.001, 1000],
	])('%d cores ⇒ %d µs per 100 ms period (at least the kernel minimum)', (cores, quota) => {
		expect(cpuQuotaUs(cores)).toBe(quota)
	})
})
