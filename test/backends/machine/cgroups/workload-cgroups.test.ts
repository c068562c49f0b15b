import { describe, expect, it } from 'vitest'
import {
	type CgroupGroupPlan,
	parseCgroupMounts,
	parseProcCgroup,
	planCgroups,
} from '../../../../src/backends/machine/cgroups/cgroup-layout.js'
import {
	type CgroupTreeStep,
	optionalControllersFor,
	planCgroupTree,
	workloadCgroupFds,
	workloadCgroupsVariable,
} from '../../../../src/backends/machine/cgroups/workload-cgroups.js'

// This machine: hybrid, v1 memory (nested), pids, cpu, cpuacct, freezer; cgroup2 with only hugetlb.
const HYBRID_CGROUP = `8:pids:/
6:freezer:/
4:memory:/process_api/abc
2:cpuacct:/
1:cpu:/
0::/
`
const HYBRID_MOUNTINFO = `32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer
35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`
const hybrid = {
	membership: parseProcCgroup(HYBRID_CGROUP),
	mounts: parseCgroupMounts(HYBRID_MOUNTINFO),
	v2Controllers: 'hugetlb\n',
	name: 'namzu-sbx-x',
}
const VALUES = { memoryLimitMb: 64, pidsMax: 64 + 24, cpuShares: 1024, cpuWeight: 100 }

function hybridPlan() {
	const needed = ['memory', 'pids', 'cpu'] as const
	const base = planCgroups({ ...hybrid, needed: [...needed] })
	if (!base.ok) throw new Error('hybrid plan failed')
	const optional = optionalControllersFor(base.groups, { cpuAccounting: true })
	const plan = planCgroups({ ...hybrid, needed: [...needed], optional })
	if (!plan.ok) throw new Error('hybrid plan failed')
	return { optional, plan }
}

const mkdirs = (steps: readonly CgroupTreeStep[]) =>
	steps.flatMap((step) => (step.kind === 'mkdir' ? [step.dir] : []))
const chowns = (steps: readonly CgroupTreeStep[]) =>
	steps.flatMap((step) => (step.kind === 'chown' ? [step.path] : []))
const writes = (steps: readonly CgroupTreeStep[]) =>
	Object.fromEntries(
		steps.flatMap((step) => (step.kind === 'write' ? [[step.write.file, step.write.value]] : [])),
	)

describe('optionalControllersFor', () => {
	it('adds cpuacct beside a v1 cpu group with a quota and freezer beside a v1 pids group', () => {
		expect(hybridPlan().optional).toEqual(['cpuacct', 'freezer'])
	})

	it('leaves cpuacct out without a quota (joining it costs every sandbox a millisecond)', () => {
		const base = planCgroups({ ...hybrid, needed: ['memory', 'pids', 'cpu'] })
		if (!base.ok) throw new Error('hybrid plan failed')
		expect(optionalControllersFor(base.groups, { cpuAccounting: false })).toEqual(['freezer'])
	})

	it('adds neither when everything lives in the unified hierarchy', () => {
		const v2: CgroupGroupPlan = {
			version: 2,
			dir: '/u/s',
			parent: '/u',
			controllers: ['memory', 'pids', 'cpu'],
		}
		expect(optionalControllersFor([v2], { cpuAccounting: true })).toEqual([])
	})
})

describe('planCgroupTree on a v1 host (as measured here)', () => {
	const { plan } = hybridPlan()
	const tree = planCgroupTree({
		groups: plan.groups,
		...(plan.v2Parent === undefined ? {} : { v2Parent: plan.v2Parent }),
		name: 'namzu-sbx-x',
		values: VALUES,
		workloadPidsMax: 64,
	})

	it('makes a group per hierarchy, and work/ in the pids, freezer and counting ones', () => {
		expect(mkdirs(tree.chains.flat())).toEqual([
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x',
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/work',
			'/sys/fs/cgroup/pids/namzu-sbx-x',
			'/sys/fs/cgroup/pids/namzu-sbx-x/work',
			'/sys/fs/cgroup/cpu/namzu-sbx-x',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x/work',
			'/sys/fs/cgroup/freezer/namzu-sbx-x',
			'/sys/fs/cgroup/freezer/namzu-sbx-x/work',
		])
		expect(tree.topDirs).toHaveLength(5)
	})

	it('gives the sandbox N + headroom tasks, the workload exactly N, and an explicit cpu share', () => {
		expect(writes(tree.chains.flat())).toMatchObject({
			'/sys/fs/cgroup/pids/namzu-sbx-x/pids.max': '88',
			'/sys/fs/cgroup/pids/namzu-sbx-x/work/pids.max': '64',
			'/sys/fs/cgroup/cpu/namzu-sbx-x/cpu.shares': '1024',
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/memory.limit_in_bytes': String(64 << 20),
		})
	})

	it('hands the work/ groups to the sandbox uid: the directory and the files to join them', () => {
		expect(chowns(tree.chains.flat())).toEqual([
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/work',
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/work/cgroup.procs',
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/work/tasks',
			'/sys/fs/cgroup/pids/namzu-sbx-x/work',
			'/sys/fs/cgroup/pids/namzu-sbx-x/work/cgroup.procs',
			'/sys/fs/cgroup/pids/namzu-sbx-x/work/tasks',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x/work',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x/work/cgroup.procs',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x/work/tasks',
			'/sys/fs/cgroup/freezer/namzu-sbx-x/work',
			'/sys/fs/cgroup/freezer/namzu-sbx-x/work/cgroup.procs',
			'/sys/fs/cgroup/freezer/namzu-sbx-x/work/tasks',
		])
	})

	it('joins bwrap to every group but the freezer one (the agent is never frozen)', () => {
		expect(tree.joinProcsFiles).toEqual([
			'/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/cgroup.procs',
			'/sys/fs/cgroup/pids/namzu-sbx-x/cgroup.procs',
			'/sys/fs/cgroup/cpu/namzu-sbx-x/cgroup.procs',
			'/sys/fs/cgroup/cpuacct/namzu-sbx-x/cgroup.procs',
		])
	})

	it('describes a joined pids group, a per-command freezer directory and two counting ones to the agent', () => {
		expect(tree.workloadGroups).toEqual([
			{
				dir: '/sys/fs/cgroup/memory/process_api/abc/namzu-sbx-x/work',
				version: 1,
				perCommand: false,
				accounting: true,
			},
			{ dir: '/sys/fs/cgroup/pids/namzu-sbx-x/work', version: 1, perCommand: false },
			{
				dir: '/sys/fs/cgroup/cpuacct/namzu-sbx-x/work',
				version: 1,
				perCommand: false,
				accounting: true,
			},
			{ dir: '/sys/fs/cgroup/freezer/namzu-sbx-x/work', version: 1, perCommand: true },
		])
		expect(workloadCgroupsVariable(workloadCgroupFds(tree.workloadGroups))).toBe(
			'[{"fd":4,"version":1,"perCommand":false,"accounting":true},{"fd":5,"version":1,"perCommand":false},{"fd":6,"version":1,"perCommand":false,"accounting":true},{"fd":7,"version":1,"perCommand":true}]',
		)
	})
})

describe('planCgroupTree on a cgroup v2 host', () => {
	const plan = planCgroups({
		membership: parseProcCgroup('0::/user.slice/u.scope\n'),
		mounts: parseCgroupMounts('30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n'),
		v2Controllers: 'cpu memory pids',
		name: 'namzu-sbx-y',
		needed: ['memory', 'pids', 'cpu'],
	})
	if (!plan.ok) throw new Error('v2 plan failed')
	const tree = planCgroupTree({
		groups: plan.groups,
		name: 'namzu-sbx-y',
		values: VALUES,
		workloadPidsMax: 64,
	})
	const base = '/sys/fs/cgroup/user.slice/u.scope/namzu-sbx-y'

	it('puts bwrap and the agent in a leaf agent/ beside work/ (no internal processes)', () => {
		expect(mkdirs(tree.chains.flat())).toEqual([base, `${base}/agent`, `${base}/work`])
		expect(tree.joinProcsFiles).toEqual([`${base}/agent/cgroup.procs`])
	})

	it('enables the controllers on the parent, and pids on the sandbox group for work/', () => {
		const enables = tree.chains.flat().flatMap((step) => (step.kind === 'enable' ? [step] : []))
		expect(enables).toEqual([
			{
				kind: 'enable',
				dir: '/sys/fs/cgroup/user.slice/u.scope',
				controllers: ['memory', 'pids', 'cpu'],
			},
			{ kind: 'enable', dir: base, controllers: ['pids'] },
		])
		expect(writes(tree.chains.flat())).toMatchObject({
			[`${base}/pids.max`]: '88',
			[`${base}/work/pids.max`]: '64',
			[`${base}/cpu.weight`]: '100',
			[`${base}/memory.max`]: String(64 << 20),
		})
	})

	it('delegates work/ and the common ancestor procs file, and makes work/ the per-command home', () => {
		expect(chowns(tree.chains.flat())).toEqual([
			`${base}/work`,
			`${base}/work/cgroup.procs`,
			`${base}/work/cgroup.subtree_control`,
			`${base}/work/cgroup.threads`,
			`${base}/cgroup.procs`,
		])
		expect(tree.workloadGroups).toEqual([{ dir: `${base}/work`, version: 2, perCommand: true }])
	})

	it('writes cpu.max for a cpu limit', () => {
		const limited = planCgroupTree({
			groups: plan.groups,
			name: 'namzu-sbx-y',
			values: { ...VALUES, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000 },
			workloadPidsMax: 64,
		})
		expect(writes(limited.chains.flat())[`${base}/cpu.max`]).toBe('50000 100000')
	})
})

describe('planCgroupTree edge cases', () => {
	it('co-mounted pids and freezer share one work/: limited and per-command', () => {
		const group: CgroupGroupPlan = {
			version: 1,
			dir: '/cg/n',
			parent: '/cg',
			controllers: ['pids', 'freezer'],
		}
		const tree = planCgroupTree({ groups: [group], name: 'n', values: VALUES, workloadPidsMax: 8 })
		expect(tree.workloadGroups).toEqual([{ dir: '/cg/n/work', version: 1, perCommand: true }])
		expect(writes(tree.chains.flat())['/cg/n/work/pids.max']).toBe('8')
	})

	it('without a v1 freezer, per-command groups go to the unified hierarchy', () => {
		const pids: CgroupGroupPlan = { version: 1, dir: '/p/n', parent: '/p', controllers: ['pids'] }
		const tree = planCgroupTree({
			groups: [pids],
			v2Parent: '/u',
			name: 'n',
			values: VALUES,
			workloadPidsMax: 8,
		})
		expect(tree.workloadGroups).toEqual([
			{ dir: '/p/n/work', version: 1, perCommand: false },
			{ dir: '/u/n/work', version: 2, perCommand: true },
		])
		expect(tree.joinProcsFiles).toEqual(['/p/n/cgroup.procs', '/u/n/agent/cgroup.procs'])
		expect(tree.topDirs).toEqual(['/p/n', '/u/n'])
	})

	it('makes no workload group for a tracking-only sandbox', () => {
		const pids: CgroupGroupPlan = { version: 1, dir: '/p/n', parent: '/p', controllers: ['pids'] }
		const tree = planCgroupTree({ groups: [pids], v2Parent: '/u', name: 'n', values: {} })
		expect(tree.workloadGroups).toEqual([])
		expect(mkdirs(tree.chains.flat())).toEqual(['/p/n'])
	})
})
