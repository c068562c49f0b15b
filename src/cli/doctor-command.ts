import {
	describeLocalIsolation,
	type IsolationCheck,
	type LocalIsolationReport,
} from '../backends/local/index.js'
import { cliBubblewrap } from './cli-bubblewrap.js'

function mark(check: IsolationCheck): string {
	return check.ok ? 'ok  ' : 'NO  '
}

/** Human-readable rendering of the local isolation report (pure, so it is testable). */
export function formatIsolationReport(report: LocalIsolationReport): string {
	const lines = [
		`local tier: ${report.ready ? 'ready' : 'NOT ready'} (environment ${report.environment})`,
		`  ${mark(report.bubblewrap)} bubblewrap        ${report.bubblewrap.path}${report.bubblewrap.version ? ` ${report.bubblewrap.version}` : ''}: ${report.bubblewrap.detail}`,
		`  ${mark(report.userNamespace)} user namespaces   ${report.userNamespace.detail}`,
		`  ${mark(report.networkNamespace)} network namespace ${report.networkNamespace.detail} (needed for deny-all egress)`,
		`  ${mark(report.cgroups.memory)} memory limits     ${report.cgroups.memory.detail} (memoryLimitMb)`,
		`  ${mark(report.cgroups.pids)} process limits    ${report.cgroups.pids.detail} (maxProcesses)`,
		`  ${mark(report.identity)} sandbox uid       ${report.identity.detail}`,
		`  ${mark(report.agentReach)} agent reach       ${report.agentReach.detail}`,
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

/** `namzu-sandbox doctor`: exit 0 when a default local sandbox can be created here, else 1. */
export async function doctorCommand(options: { readonly json: boolean }): Promise<number> {
	const report = await describeLocalIsolation({ tier: 'process', ...cliBubblewrap() })
	process.stdout.write(
		options.json ? `${JSON.stringify(report, null, 2)}\n` : formatIsolationReport(report),
	)
	return report.ready ? 0 : 1
}
