import { totalmem } from 'node:os'
import { describe, expect, it } from 'vitest'
import { describeLocalIsolation } from '../../../src/backends/local/index.js'
import { AGENT_TASK_HEADROOM } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import {
	DEFAULT_MAX_PROCESSES,
	defaultMemoryLimitMb,
	tmpfsSizesFor,
} from '../../../src/backends/machine/spec/sandbox-limits.js'
import { bwrapSkipReason } from './bwrap-available.js'

const skip = bwrapSkipReason()

describe('describeLocalIsolation', () => {
	it.skipIf(skip !== undefined)(
		`reports bubblewrap, namespaces and the v1 memory/pids controllers this machine offers${skip ? ` (skipped: ${skip})` : ''}`,
		async () => {
			const report = await describeLocalIsolation()
			expect(report.isolation).toBe('bubblewrap')
			expect(report.environment).toBe('linux-bwrap')
			expect(report.bubblewrap).toMatchObject({ ok: true, path: '/usr/bin/bwrap' })
			expect(report.bubblewrap.version).toMatch(/^\d+\.\d+/)
			expect(report.userNamespace.ok).toBe(true)
			expect(report.networkNamespace.ok).toBe(true)
			expect(report.ready).toBe(true)
			for (const controller of ['memory', 'pids', 'cpu'] as const) {
				expect(report.cgroups[controller].ok).toBe(true)
				expect([1, 2]).toContain(report.cgroups[controller].version)
			}
		},
	)

	it.skipIf(skip !== undefined)(
		'reports the confinement actually applied: the sandbox uid, a live agent-reach check, the root and its masks',
		async () => {
			const report = await describeLocalIsolation()
			expect(report.identity.ok).toBe(true)
			expect(report.identity.mode).toBe(process.getuid?.() === 0 ? 'per-sandbox-uid' : 'host-user')
			// A real sandbox ran, and its workload could not read the agent's environment.
			expect(report.agentReach).toMatchObject({ ok: true, ran: true })
			expect(report.agentReach.rootListing).toContain('usr')
			expect(report.agentReach.rootListing).not.toContain('root')
			expect(report.agentReach.rootListing).not.toContain('home')
			expect(report.root.mounts[0]).toContain('empty tmpfs')
			expect(report.root.mounts).toContain('/etc (read-only)')
			expect(report.root.mounts.at(-1)).toBe('/ remounted read-only')
			expect(report.root.masked).toContain('/etc/shadow')
			expect(report.root.mounts.join('\n')).not.toMatch(/^\/root|^\/home/m)
		},
	)

	it.skipIf(skip !== undefined)(
		'reports the bounds a default sandbox gets and the network modes',
		async () => {
			const report = await describeLocalIsolation()
			expect(report.defaultLimits).toEqual({
				mode: 'required',
				enforced: true,
				memoryLimitMb: defaultMemoryLimitMb(totalmem()),
				maxProcesses: DEFAULT_MAX_PROCESSES,
				agentTaskHeadroom: AGENT_TASK_HEADROOM,
				cpuShares: 1024,
				cpuWeight: 100,
				tmpfs: tmpfsSizesFor(defaultMemoryLimitMb(totalmem())),
			})
			expect(report.network.defaultEgress).toBe('deny-all')
			expect(report.network.denyAll.ok).toBe(true)
			expect(report.network.allowAll).toMatchObject({ ok: true })
			expect(report.network.allowAll.detail).toContain('slirp4netns')
			expect(report.network.proxied).toMatchObject({ ok: true })
			expect(Object.keys(report.network.proxied.layers).sort()).toEqual([
				'connect',
				'dns',
				'host',
				'http',
				'ip',
				'sni',
			])
			if (process.getuid?.() === 0) expect(report.diskLimit.ok).toBe(true)
		},
	)

	it('says allow-all is refused, and what to install, when its tools are missing', async () => {
		const report = await describeLocalIsolation({
			tier: 'process',
			tools: { slirp4netns: '/nonexistent/slirp4netns' },
		})
		expect(report.network.allowAll.ok).toBe(false)
		expect(report.network.allowAll.detail).toContain('apt-get install -y slirp4netns')
		expect(report.problems.join('\n')).toContain('egress allow-all is refused here')
	})

	it('says static and resolver are refused, and what to install, when ip is missing', async () => {
		const report = await describeLocalIsolation(
			{ tier: 'process', tools: { ip: '/nonexistent/ip' } },
			{ probeAgent: false },
		)
		expect(report.network.proxied.ok).toBe(false)
		expect(report.network.proxied.detail).toContain('iproute2')
		expect(report.network.allowAll.ok).toBe(true)
		expect(report.problems.join('\n')).toContain('egress static and resolver are refused here')
	})

	it("reports defaultLimits: 'best-effort' as the explicit opt-out it is", async () => {
		const report = await describeLocalIsolation({ tier: 'process', defaultLimits: 'best-effort' })
		expect(report.defaultLimits.mode).toBe('best-effort')
	})

	it('says what was looked for and how to install it when bwrap is missing', async () => {
		const report = await describeLocalIsolation({
			tier: 'process',
			bwrapPath: '/nonexistent/bwrap',
		})
		expect(report.ready).toBe(false)
		expect(report.bubblewrap.ok).toBe(false)
		expect(report.problems.join('\n')).toContain('apt-get install -y bubblewrap')
		expect(report.problems.join('\n')).toContain('/nonexistent/bwrap')
	})

	it("reports isolation 'none' as the unconfined basic environment", async () => {
		const report = await describeLocalIsolation({ tier: 'process', isolation: 'none' })
		expect(report.environment).toBe('basic')
		expect(report.ready).toBe(true)
		expect(report.problems.join('\n')).toContain("isolation 'none'")
	})
})
