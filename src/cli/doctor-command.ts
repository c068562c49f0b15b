import {
	type ContainerEgressSupport,
	containerEgressSupport,
} from '../backends/container/container-egress-support.js'
import type { ContainerRuntimeReport } from '../backends/container/runtime-probe.js'
import { probeContainerRuntimes } from '../backends/container/runtime-probe.js'
import { describeLocalIsolation, type LocalIsolationReport } from '../backends/local/index.js'
import type { IsolationCheck } from '../backends/machine/index.js'
import { describeMicroVM, formatMicroVMReport } from '../backends/microvm/microvm-doctor.js'
import { cliBubblewrap } from './cli-bubblewrap.js'

function mark(check: IsolationCheck): string {
	return check.ok ? 'ok  ' : 'NO  '
}

/** What a sandbox created with no options gets (its tmpfs sizes are in the root listing). */
function defaultSandboxLines(report: LocalIsolationReport): string[] {
	const limits = report.defaultLimits
	return [
		`default sandbox (backend.defaultLimits: ${limits.mode}${limits.enforced ? '' : ', NOT enforced here'}):`,
		`  memory ${limits.memoryLimitMb} MiB; ${limits.maxProcesses} workload tasks (threads count) + ${limits.agentTaskHeadroom} for the agent; cpu.shares ${limits.cpuShares} / cpu.weight ${limits.cpuWeight}, no quota`,
		report.isolation === 'bubblewrap'
			? `  every tmpfs sized inside the memory limit (below), /dev bounded by it; egress ${report.network.defaultEgress}`
			: "  isolation 'none': no private tmpfs, no network namespace",
	]
}

/**
 * The host tuning the library never applies itself: the kernel's cgroup migration mode (a
 * host-wide trade), with what to run when it is off.
 */
function hostTuningLines(report: LocalIsolationReport): string[] {
	const migrations = report.cgroupMigrations
	const lines = [
		'host tuning (optional; host-wide, never changed by this library):',
		`  ${migrations.ok ? 'ok  ' : '--  '} cgroup migrations ${migrations.detail}`,
	]
	if (migrations.fix) lines.push(`       to turn on: ${migrations.fix}`)
	return lines
}

/** Human-readable rendering of the local isolation report (pure, so it is testable). */
export function formatIsolationReport(report: LocalIsolationReport): string {
	const lines = [
		`local tier: ${report.ready ? 'ready' : 'NOT ready'} (environment ${report.environment})`,
		`  ${mark(report.bubblewrap)} bubblewrap        ${report.bubblewrap.path}${report.bubblewrap.version ? ` ${report.bubblewrap.version}` : ''}: ${report.bubblewrap.detail}`,
		`  ${mark(report.userNamespace)} user namespaces   ${report.userNamespace.detail}`,
		`  ${mark(report.networkNamespace)} network namespace ${report.networkNamespace.detail} (every sandbox has its own)`,
		`  ${mark(report.seccomp)} seccomp           ${report.seccomp.detail}`,
		`  ${mark(report.identity)} sandbox uid       ${report.identity.detail}`,
		`  ${mark(report.agentReach)} agent reach       ${report.agentReach.detail}`,
		`  ${mark(report.network.denyAll)} egress deny-all   default: loopback only, no route anywhere`,
		`  ${mark(report.network.allowAll)} egress allow-all  ${report.network.allowAll.detail}`,
		`  ${mark(report.network.proxied)} egress static     static and resolver: ${report.network.proxied.detail}`,
		`  ${mark(report.cgroups.memory)} memory limits     ${report.cgroups.memory.detail} (memoryLimitMb)`,
		`  ${mark(report.cgroups.pids)} process limits    ${report.cgroups.pids.detail} (maxProcesses)`,
		`  ${mark(report.cgroups.cpu)} cpu limits        ${report.cgroups.cpu.detail} (cpuLimit, cpu share)`,
		`  ${mark(report.diskLimit)} disk limits       ${report.diskLimit.detail} (diskLimitMb)`,
		`  ${mark(report.checkpoints)} checkpoints       ${report.checkpoints.mode}: ${report.checkpoints.detail}`,
		'',
		...defaultSandboxLines(report),
		'',
		...hostTuningLines(report),
		'',
		'root a sandbox sees (in mount order):',
		...report.root.mounts.map((mount) => `  ${mount}`),
		`masked: ${report.root.masked.length === 0 ? 'nothing' : report.root.masked.join(', ')}`,
	]
	if (report.problems.length > 0) {
		lines.push('', 'problems:')
		for (const problem of report.problems) lines.push(`  - ${problem}`)
	}
	return `${lines.join('\n')}\n`
}

/** A runtime's egress, after its line: what it serves, and each kind refused with why. */
function egressLines(support: ContainerEgressSupport): string[] {
	const byWhy = new Map<string, string[]>()
	for (const { kind, why } of support.refused) byWhy.set(why, [...(byWhy.get(why) ?? []), kind])
	return [
		`         egress ${support.served.join(', ')}`,
		...[...byWhy].map(([why, kinds]) => `         no ${kinds.join(', ')}: ${why}`),
	]
}

/**
 * The container tier's runtimes, one line each: works, or why not and what to do; for one that
 * works, the egress kinds it serves here (pure).
 */
export function formatContainerRuntimes(
	reports: readonly (ContainerRuntimeReport & { readonly egress?: ContainerEgressSupport })[],
): string {
	const lines = ['container tier runtimes (backend.runtime):']
	for (const report of reports) {
		const name = report.runtime.padEnd(6)
		if (!report.works) {
			lines.push(
				`  NO   ${name} ${report.path}: ${report.detail}${report.fix ? ` (${report.fix})` : ''}`,
			)
			continue
		}
		lines.push(`  ok   ${name} ${report.path}: ${report.detail}`)
		if (report.egress) lines.push(...egressLines(report.egress))
	}
	return `${lines.join('\n')}\n`
}

/**
 * `namzu-sandbox doctor`: exit 0 when a default local sandbox can be created here, else 1. The
 * container runtimes and the microVM tier are reported beside it and do not change the exit code.
 */
export async function doctorCommand(options: { readonly json: boolean }): Promise<number> {
	const report = await describeLocalIsolation({ tier: 'process', ...cliBubblewrap() })
	const containerRuntimes = (await probeContainerRuntimes()).map((runtime) => ({
		...runtime,
		egress: containerEgressSupport(runtime.runtime, report.network),
	}))
	const microvm = await describeMicroVM()
	process.stdout.write(
		options.json
			? `${JSON.stringify({ ...report, containerRuntimes, microvm }, null, 2)}\n`
			: `${formatIsolationReport(report)}\n${formatContainerRuntimes(containerRuntimes)}\n${formatMicroVMReport(microvm)}`,
	)
	return report.ready ? 0 : 1
}
