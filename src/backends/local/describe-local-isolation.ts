/**
 * What the local tier can enforce on this machine, and why not when it cannot — for the CLI's
 * `doctor`. Every answer comes from a real check (a sentinel bwrap run, the cgroup mounts, a real
 * sandbox whose workload tries to reach its agent), never from assumptions about the
 * distribution.
 */
import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import { access, readFile } from 'node:fs/promises'
import { release } from 'node:os'
import { gunzipSync } from 'node:zlib'
import type { SandboxEnvironment } from '../../contract/sandbox.js'
import type { LimitController } from '../machine/cgroups/cgroup-layout.js'
import { planSandboxCgroups, readCgroupHostView } from '../machine/cgroups/cgroup-limits.js'
import {
	type CgroupMigrationCheck,
	cgroupMigrationMode,
} from '../machine/cgroups/cgroup-migration-mode.js'
import type { CgroupControllerCheck, IsolationCheck } from '../machine/isolation-check.js'
import { missingProgramLine } from '../machine/launch/install-hint.js'
import { assertBubblewrapUsable, bubblewrapVersion } from './bubblewrap-binary.js'
import {
	type AgentReachReport,
	describeSandboxIdentity,
	describeSandboxRoot,
	probeAgentReach,
	type SandboxIdentityReport,
	type SandboxRootReport,
} from './confinement-report.js'
import {
	boundsProblems,
	describeLocalBounds,
	type LocalBoundsReport,
} from './describe-local-bounds.js'
import { describeLocalSeccomp } from './describe-local-seccomp.js'
import { type LocalBackendConfig, resolveLocalBackendConfig } from './local-backend-config.js'
import { BubblewrapUnavailableError } from './local-errors.js'

/** What the local tier can enforce on this machine, each answer from a real check (`namzu-sandbox doctor`). */
export interface LocalIsolationReport extends LocalBoundsReport {
	readonly isolation: 'bubblewrap' | 'none'
	readonly environment: SandboxEnvironment
	readonly bubblewrap: IsolationCheck & { readonly path: string; readonly version?: string }
	readonly userNamespace: IsolationCheck
	readonly networkNamespace: IsolationCheck
	/** The seccomp filter every sandbox gets, and whether a sentinel run under it shows it in force. */
	readonly seccomp: IsolationCheck
	readonly cgroups: Readonly<Record<LimitController, CgroupControllerCheck>>
	/** Whether the kernel moves a command into its cgroups in its low-latency mode (host tuning). */
	readonly cgroupMigrations: CgroupMigrationCheck
	/** The host uid sandboxes run as: one per sandbox (root host) or this user. */
	readonly identity: SandboxIdentityReport
	/** The root a sandbox sees: its mounts in order, and what is masked. */
	readonly root: SandboxRootReport
	/** A real sandbox's workload tried to read its agent's `/proc/<pid>/environ`. */
	readonly agentReach: AgentReachReport
	/** Whether `create()` with default settings can succeed here, with every isolation above. */
	readonly ready: boolean
	/** Human-readable problems, with the fix where there is one. */
	readonly problems: readonly string[]
}

function run(file: string, args: readonly string[]): Promise<IsolationCheck> {
	return new Promise((resolve) => {
		execFile(file, [...args], { timeout: 10_000 }, (error, _stdout, stderr) => {
			if (!error) return resolve({ ok: true, detail: 'sentinel run succeeded' })
			const text = stderr.trim() || error.message
			resolve({ ok: false, detail: text.slice(0, 500) })
		})
	})
}

const LIMIT_FIELDS: Readonly<Record<LimitController, string>> = {
	memory: 'memoryLimitMb',
	pids: 'maxProcesses',
	cpu: 'cpuLimit',
}

const SENTINEL_BASE = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp']

async function maxUserNamespaces(): Promise<string> {
	try {
		return (await readFile('/proc/sys/user/max_user_namespaces', 'utf8')).trim()
	} catch {
		return 'unknown'
	}
}

async function cgroupChecks(): Promise<Record<LimitController, CgroupControllerCheck>> {
	const view = await readCgroupHostView()
	const out: Partial<Record<LimitController, CgroupControllerCheck>> = {}
	for (const controller of ['memory', 'pids', 'cpu'] as const) {
		const plan = planSandboxCgroups(view, [controller], 'namzu-doctor')
		if (!plan.ok) {
			out[controller] = { ok: false, detail: `not available: ${plan.detail}` }
			continue
		}
		const group = plan.groups[0]
		if (!group) continue
		let writable = true
		try {
			await access(group.parent, constants.W_OK)
		} catch {
			writable = false
		}
		out[controller] = {
			ok: writable,
			version: group.version,
			parent: group.parent,
			detail: writable
				? `cgroup v${group.version}, groups nested under ${group.parent}`
				: `cgroup v${group.version} at ${group.parent} is not writable by this process`,
		}
	}
	const missing = { ok: false, detail: 'not available' }
	return { memory: out.memory ?? missing, pids: out.pids ?? missing, cpu: out.cpu ?? missing }
}

function readText(path: string): Promise<string | undefined> {
	return readFile(path, 'utf8').catch(() => undefined)
}

/** The kernel's build configuration, where the host offers it. */
async function kernelConfig(kernelRelease: string): Promise<string | undefined> {
	const packed = await readFile('/proc/config.gz').catch(() => undefined)
	if (packed) {
		try {
			return gunzipSync(packed).toString('utf8')
		} catch {
			// A damaged /proc/config.gz: fall back to the distribution's copy.
		}
	}
	return readText(`/boot/config-${kernelRelease}`)
}

async function describeCgroupMigrations(): Promise<CgroupMigrationCheck> {
	const kernelRelease = release()
	return cgroupMigrationMode({
		mountinfo: (await readText('/proc/self/mountinfo')) ?? '',
		cmdline: await readText('/proc/cmdline'),
		kernelConfig: await kernelConfig(kernelRelease),
		kernelRelease,
		rcuExpedited: await readText('/sys/kernel/rcu_expedited'),
		rcuNormal: await readText('/sys/kernel/rcu_normal'),
	})
}

/** Options of `describeLocalIsolation`. */
export interface DescribeLocalIsolationOptions {
	/** Start a real sandbox to check the agent is out of the workload's reach (default true). */
	readonly probeAgent?: boolean
}

/** bubblewrap usable, and the user and network namespaces it makes, each by a sentinel run. */
interface NamespaceChecks {
	readonly bubblewrap: LocalIsolationReport['bubblewrap']
	/** The line the CLI and the demo print when bubblewrap is missing: what, and how to get it. */
	readonly bubblewrapProblem: string | undefined
	readonly userNamespace: IsolationCheck
	readonly networkNamespace: IsolationCheck
}

async function checkNamespaces(bwrapPath: string): Promise<NamespaceChecks> {
	let userNamespace: IsolationCheck = { ok: false, detail: 'not checked: bubblewrap unusable' }
	let networkNamespace: IsolationCheck = userNamespace
	try {
		await assertBubblewrapUsable(bwrapPath)
		const version = await bubblewrapVersion(bwrapPath)
		const bubblewrap = {
			ok: true,
			path: bwrapPath,
			detail: 'present and executable',
			...(version === undefined ? {} : { version }),
		}
		const common = ['--unshare-pid', '--die-with-parent', '--cap-drop', 'ALL']
		userNamespace = await run(bwrapPath, [
			...SENTINEL_BASE,
			'--unshare-user',
			...common,
			'/bin/true',
		])
		if (!userNamespace.ok) {
			userNamespace = {
				ok: false,
				detail: `${userNamespace.detail} (max_user_namespaces=${await maxUserNamespaces()})`,
			}
		}
		networkNamespace = await run(bwrapPath, [
			...SENTINEL_BASE,
			'--unshare-user',
			'--unshare-net',
			...common,
			'/bin/true',
		])
		return { bubblewrap, bubblewrapProblem: undefined, userNamespace, networkNamespace }
	} catch (error) {
		const bubblewrap = {
			ok: false,
			path: bwrapPath,
			detail: error instanceof Error ? error.message : String(error),
		}
		const bubblewrapProblem =
			error instanceof BubblewrapUnavailableError
				? missingProgramLine('bubblewrap', error.bwrapPath, error.fix)
				: undefined
		return { bubblewrap, bubblewrapProblem, userNamespace, networkNamespace }
	}
}

/** What the report's reader must fix, most fundamental first. */
function isolationProblems(
	report: Omit<LocalIsolationReport, 'ready' | 'problems'>,
	checks: NamespaceChecks,
	probeAgent: boolean,
): string[] {
	const problems: string[] = []
	const { bubblewrap, userNamespace, networkNamespace, identity, seccomp, agentReach } = report
	const namespacesOk = bubblewrap.ok && userNamespace.ok && networkNamespace.ok
	if (report.isolation === 'bubblewrap') {
		if (!bubblewrap.ok) problems.push(checks.bubblewrapProblem ?? bubblewrap.detail)
		else if (!userNamespace.ok) problems.push(`user namespaces unusable: ${userNamespace.detail}`)
		else if (!networkNamespace.ok) {
			problems.push(
				`network namespaces unusable (every sandbox has one): ${networkNamespace.detail}`,
			)
		}
		if (!identity.ok) problems.push(`sandbox uids: ${identity.detail}`)
		if (namespacesOk && !seccomp.ok) problems.push(`seccomp: ${seccomp.detail}`)
		if (agentReach.ran && !agentReach.ok) problems.push(`agent reach: ${agentReach.detail}`)
		if (!agentReach.ran && namespacesOk && identity.ok && probeAgent) {
			problems.push(`agent reach: ${agentReach.detail}`)
		}
	} else {
		problems.push("isolation 'none': the agent runs unconfined as this user (development only)")
	}
	for (const controller of ['memory', 'pids', 'cpu'] as const) {
		if (!report.cgroups[controller].ok) {
			problems.push(
				`${LIMIT_FIELDS[controller]} cannot be enforced: ${report.cgroups[controller].detail}`,
			)
		}
	}
	problems.push(...boundsProblems(report))
	return problems
}

/** Checks what the local tier can enforce here (a sentinel bwrap run, cgroups, a real sandbox). */
export async function describeLocalIsolation(
	config: LocalBackendConfig = { tier: 'process' },
	options: DescribeLocalIsolationOptions = {},
): Promise<LocalIsolationReport> {
	const resolved = resolveLocalBackendConfig(config)
	const checks = await checkNamespaces(resolved.bwrapPath)
	const { bubblewrap, userNamespace, networkNamespace } = checks
	const cgroups = await cgroupChecks()
	const usesBwrap = resolved.isolation === 'bubblewrap'
	const identity: SandboxIdentityReport = usesBwrap
		? await describeSandboxIdentity(resolved)
		: {
				ok: true,
				mode: 'host-user',
				detail: "isolation 'none': the agent runs as this user, unconfined",
			}
	const bounds = await describeLocalBounds(resolved, cgroups, networkNamespace)
	const root = usesBwrap
		? await describeSandboxRoot(resolved, bounds.defaultLimits.tmpfs)
		: {
				mounts: [
					"none: isolation 'none' runs the agent unconfined, with the host's whole filesystem",
				],
				masked: [],
			}
	const namespacesOk = bubblewrap.ok && userNamespace.ok && networkNamespace.ok
	const seccomp: IsolationCheck = usesBwrap
		? await describeLocalSeccomp(resolved.bwrapPath, namespacesOk)
		: { ok: false, detail: "isolation 'none': no seccomp filter (the agent runs unconfined)" }
	const agentReach: AgentReachReport =
		usesBwrap && namespacesOk && identity.ok && options.probeAgent !== false
			? await probeAgentReach(config)
			: { ok: false, ran: false, detail: 'not checked' }
	const report = {
		...bounds,
		isolation: resolved.isolation,
		environment: usesBwrap ? ('linux-bwrap' as const) : ('basic' as const),
		bubblewrap,
		userNamespace,
		networkNamespace,
		seccomp,
		cgroups,
		cgroupMigrations: await describeCgroupMigrations(),
		identity,
		root,
		agentReach,
	}
	const boundsReady = bounds.defaultLimits.enforced || bounds.defaultLimits.mode === 'best-effort'
	return {
		...report,
		ready:
			boundsReady &&
			(usesBwrap
				? namespacesOk &&
					identity.ok &&
					seccomp.ok &&
					(options.probeAgent === false || agentReach.ok)
				: true),
		problems: isolationProblems(report, checks, options.probeAgent !== false),
	}
}
