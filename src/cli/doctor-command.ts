import {
	describeLocalIsolation,
	type IsolationCheck,
	type LocalIsolationReport,
} from '../backends/local/index.js'

function mark(check: IsolationCheck): string {
	return check.ok ? 'ok  ' : 'NO  '
}

const MIB = 1024 * 1024

/** The network and default-limit lines: what a sandbox created with no options gets. */
function formatBounds(report: LocalIsolationReport): string[] {
	const limits = report.defaultLimits
	const tmpfs = Object.entries(limits.tmpfs)
		.map(([mount, bytes]) => `${mount} ${Math.round(bytes / MIB)} MiB`)
		.join(', ')
	return [
		`  ${mark(report.network.denyAll)} egress deny-all   default: loopback only, no route anywhere`,
		`  ${mark(report.network.allowAll)} egress allow-all  ${report.network.allowAll.detail}`,
		`  ${mark(report.diskLimit)} disk limits       ${report.diskLimit.detail} (diskLimitMb)`,
		'',
		`default sandbox (backend.defaultLimits: ${limits.mode}${limits.enforced ? '' : ', NOT enforced here'}):`,
		`  memory ${limits.memoryLimitMb} MiB; ${limits.maxProcesses} workload tasks (threads count) + ${limits.agentTaskHeadroom} for the agent; cpu.shares ${limits.cpuShares} / cpu.weight ${limits.cpuWeight}, no quota`,
		`  tmpfs ${tmpfs}; /dev bounded by the memory limit; egress ${report.network.defaultEgress}`,
	]
}

/** Human-readable rendering of the local isolation report (pure, so it is testable). */
export function formatIsolationReport(report: LocalIsolationReport): string {
	const lines = [
		`local tier: ${report.ready ? 'ready' : 'NOT ready'} (environment ${report.environment})`,
		`  ${mark(report.bubblewrap)} bubblewrap        ${report.bubblewrap.path}${report.bubblewrap.version ? ` ${report.bubblewrap.version}` : ''}: ${report.bubblewrap.detail}`,
		`  ${mark(report.userNamespace)} user namespaces   ${report.userNamespace.detail}`,
		`  ${mark(report.networkNamespace)} network namespace ${report.networkNamespace.detail} (every sandbox has its own)`,
		`  ${mark(report.cgroups.memory)} memory limits     ${report.cgroups.memory.detail} (memoryLimitMb)`,
		`  ${mark(report.cgroups.pids)} process limits    ${report.cgroups.pids.detail} (maxProcesses)`,
		`  ${mark(report.cgroups.cpu)} cpu limits        ${report.cgroups.cpu.detail} (cpuLimit, cpu share)`,
		...formatBounds(report),
	]
	if (report.problems.length > 0) {
		lines.push('', 'problems:')
		for (const problem of report.problems) lines.push(`  - ${problem}`)
	}
	return `${lines.join('\n')}\n`
}

/** `namzu-sandbox doctor`: exit 0 when a default local sandbox can be created here, else 1. */
export async function doctorCommand(options: { readonly json: boolean }): Promise<number> {
	const report = await describeLocalIsolation()
	process.stdout.write(
		options.json ? `${JSON.stringify(report, null, 2)}\n` : formatIsolationReport(report),
	)
	return report.ready ? 0 : 1
}
