import { describe, expect, it } from 'vitest'
import { containerEgressSupport } from '../../../src/backends/container/container-egress-support.js'
import { RUNSC_EGRESS_REASON } from '../../../src/backends/container/container-sandbox-spec.js'
import {
	probeContainerRuntimes,
	type RuntimeProbeFacts,
	runtimeVerdict,
} from '../../../src/backends/container/runtime-probe.js'
import { formatContainerRuntimes } from '../../../src/cli/doctor-command.js'
import { containerSkipReason } from './container-test-support.js'

const base: RuntimeProbeFacts = {
	runtime: 'crun',
	path: '/usr/bin/crun',
	executable: true,
	asRoot: true,
}

describe('runtimeVerdict', () => {
	it.each([
		[
			'not installed',
			{ ...base, executable: false },
			{ works: false, detail: '/usr/bin/crun is not installed', fix: 'apt-get install -y crun' },
		],
		[
			'not root',
			{ ...base, asRoot: false },
			{ works: false, detail: 'the container tier runs its runtime as root' },
		],
		[
			'a container that ran',
			{ ...base, run: { code: 0, stderr: '' } },
			{ works: true, detail: 'ran /bin/true in a container under the seccomp filter' },
		],
		[
			'the hybrid cgroup refusal',
			{
				...base,
				run: {
					code: 1,
					stderr: 'cgroups in hybrid mode not supported, drop all controllers from cgroupv2',
				},
			},
			{
				works: false,
				detail:
					"refuses this host's hybrid cgroups even in a private mount namespace: cgroups in hybrid mode not supported, drop all controllers from cgroupv2",
				fix: "use runtime 'runc'",
			},
		],
		[
			'any other failure, with its last line',
			{ ...base, run: { code: 1, stderr: 'warning\npivot_root: Device or resource busy\n' } },
			{
				works: false,
				detail: 'a test container failed (exit 1): pivot_root: Device or resource busy',
			},
		],
	])('%s', (_name, facts, expected) => {
		expect(runtimeVerdict(facts)).toMatchObject(expected)
	})

	it('formats one line per runtime for doctor', () => {
		expect(
			formatContainerRuntimes([
				{
					runtime: 'runc',
					path: '/usr/sbin/runc',
					works: true,
					detail: 'ran /bin/true in a container under the seccomp filter',
				},
				{
					runtime: 'runsc',
					path: '/usr/bin/runsc',
					works: false,
					detail: 'not installed',
					fix: 'apt-get install -y runsc',
				},
			]),
		).toBe(
			'container tier runtimes (backend.runtime):\n  ok   runc   /usr/sbin/runc: ran /bin/true in a container under the seccomp filter\n  NO   runsc  /usr/bin/runsc: not installed (apt-get install -y runsc)\n',
		)
	})

	it('lists under a working runtime the egress kinds it serves, and each refused one with why', () => {
		expect(
			formatContainerRuntimes([
				{
					runtime: 'crun',
					path: '/usr/bin/crun',
					works: true,
					detail: 'ran /bin/true in a container under the seccomp filter',
					egress: containerEgressSupport('crun', {
						allowAll: { ok: false, detail: 'slirp4netns is missing' },
						proxied: { ok: true, detail: 'capture route' },
					}),
				},
			]),
		).toBe(
			'container tier runtimes (backend.runtime):\n  ok   crun   /usr/bin/crun: ran /bin/true in a container under the seccomp filter\n         egress deny-all, static, resolver\n         no allow-all: slirp4netns is missing\n',
		)
	})
})

describe('the egress kinds a container runtime serves here', () => {
	const ok = { ok: true, detail: 'fine' }
	const no = (detail: string) => ({ ok: false, detail })
	it.each([
		[
			'runc, every tool present',
			'runc',
			ok,
			ok,
			['deny-all', 'allow-all', 'static', 'resolver'],
			[],
		],
		[
			'crun without slirp4netns',
			'crun',
			no('no slirp'),
			ok,
			['deny-all', 'static', 'resolver'],
			['allow-all'],
		],
		[
			'runc without nsenter',
			'runc',
			ok,
			no('no nsenter'),
			['deny-all', 'allow-all'],
			['static', 'resolver'],
		],
		[
			'runsc, whatever the tools',
			'runsc',
			ok,
			ok,
			['deny-all'],
			['allow-all', 'static', 'resolver'],
		],
	] as const)('%s', (_case, runtime, allowAll, proxied, served, refused) => {
		const support = containerEgressSupport(runtime, { allowAll, proxied })
		expect(support.served).toEqual(served)
		expect(support.refused.map((entry) => entry.kind)).toEqual(refused)
		if (runtime === 'runsc') expect(support.refused[0]?.why).toBe(RUNSC_EGRESS_REASON)
	})
})

describe.skipIf(containerSkipReason() !== undefined)('probeContainerRuntimes on this host', () => {
	it('finds runc working, and reports every runtime the tier drives', async () => {
		const reports = await probeContainerRuntimes()
		expect(reports.map((report) => report.runtime)).toEqual(['runc', 'crun', 'runsc'])
		expect(reports[0]).toMatchObject({ runtime: 'runc', works: true })
	})

	it('reports a runtime at a missing path as not installed', async () => {
		const [runc] = await probeContainerRuntimes({ runc: '/nonexistent/runc' })
		expect(runc).toMatchObject({
			works: false,
			detail: '/nonexistent/runc is not installed',
			fix: 'apt-get install -y runc',
		})
	})
})
