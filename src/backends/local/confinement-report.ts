/**
 * The confinement part of `doctor`: who a sandbox runs as, the root it sees (the mount list every
 * sandbox gets, with this host's layout and masks) and a live proof that the agent is out of the
 * workload's reach — a real sandbox is started and its workload tries to read the agent's
 * `/proc/<pid>/environ`.
 */
import { join } from 'node:path'
import { ephemeralWorkspacePath } from '../machine/claims/host-claims.js'
import { perSandboxUids, type SandboxUidRange } from '../machine/claims/sandbox-identity.js'
import { assertHostTool, HOST_TOOLS } from '../machine/launch/host-tools.js'
import { runtimeDirName } from '../machine/launch/runtime-cache.js'
import type { TmpfsSizes } from '../machine/spec/sandbox-limits.js'
import { maskTargetsOf, readHostRootLayout } from './host-root-layout.js'
import type { LocalBackendConfig, ResolvedLocalBackendConfig } from './local-backend-config.js'
import { createLocalSandboxProvider } from './local-sandbox-provider.js'
import { describeRootMount, planSandboxRoot, underSystemBinds } from './sandbox-root.js'

export interface CheckResult {
	readonly ok: boolean
	readonly detail: string
}

/** Which host uid sandboxes run as here. */
export interface SandboxIdentityReport extends CheckResult {
	/** `per-sandbox-uid` on a root host, else `host-user`. */
	readonly mode: 'per-sandbox-uid' | 'host-user'
	readonly range?: SandboxUidRange
}

/** The root filesystem a sandbox sees: its mounts in order and what is masked. */
export interface SandboxRootReport {
	/** One line per mount, in order, as a default sandbox of this configuration gets them. */
	readonly mounts: readonly string[]
	/** Paths masked inside (secrets of /etc present on this host, `hiddenPaths`). */
	readonly masked: readonly string[]
}

/** Whether a real sandbox's workload could reach its agent (`/proc/<pid>/environ`, its descriptors). */
export interface AgentReachReport extends CheckResult {
	/** Whether a sandbox was actually started for the check. */
	readonly ran: boolean
	/** `ls -A /` as that sandbox's workload saw it. */
	readonly rootListing?: readonly string[]
}

export async function describeSandboxIdentity(
	resolved: ResolvedLocalBackendConfig,
): Promise<SandboxIdentityReport> {
	if (!perSandboxUids()) {
		return {
			ok: true,
			mode: 'host-user',
			detail:
				'not root: every sandbox runs as this user (a setuid file it makes is setuid-to-you, which gains nothing; your own 0600 files are readable if bound, which is why the root is minimal)',
		}
	}
	const range = resolved.sandboxUidRange
	const span = `${range.first}..${range.first + range.count - 1}`
	try {
		await assertHostTool('setpriv', 'start bubblewrap as the sandbox uid')
	} catch (error) {
		return {
			ok: false,
			mode: 'per-sandbox-uid',
			range,
			detail: error instanceof Error ? error.message : String(error),
		}
	}
	return {
		ok: true,
		mode: 'per-sandbox-uid',
		range,
		detail: `root host: each sandbox runs as its own uid from ${span} (started through ${HOST_TOOLS.setpriv}), uid 0 inside`,
	}
}

/** The mounts a default sandbox gets here (paths of one sandbox shown with `<id>`). */
export async function describeSandboxRoot(
	resolved: ResolvedLocalBackendConfig,
	tmpfsSizes?: TmpfsSizes,
): Promise<SandboxRootReport> {
	const layout = await readHostRootLayout()
	const stateRoot = join(resolved.stateDir, 'namzu-sbx-<id>')
	const runtime = join(resolved.stateDir, runtimeDirName())
	const plan = planSandboxRoot({
		layout,
		workspace: {
			source: ephemeralWorkspacePath(stateRoot),
			target: ephemeralWorkspacePath(stateRoot),
		},
		homeDir: '/tmp/home',
		runtime: {
			agentNode: join(runtime, 'node-<key>'),
			agentBundle: join(runtime, 'agent-<key>.cjs'),
			emptyFile: join(runtime, 'empty'),
		},
		readOnly: [
			...resolved.readOnlyPaths.map((path) => ({ source: path, target: path })),
			...(underSystemBinds(resolved.nodePath, layout)
				? []
				: [{ source: join(runtime, 'node-<key>.readable'), target: resolved.nodePath }]),
		],
		hidden: await maskTargetsOf(resolved.hiddenPaths),
		...(tmpfsSizes ? { tmpfsSizes } : {}),
	})
	return { mounts: plan.mounts.map(describeRootMount), masked: plan.masked }
}

const REACH_PROBE =
	'cat /proc/$PPID/environ > /dev/null 2>&1 && echo "agent reachable" || echo "agent unreachable"; ls -A /'

/** Starts a real sandbox and has its workload try to read the agent's environment. */
export async function probeAgentReach(config: LocalBackendConfig): Promise<AgentReachReport> {
	const provider = createLocalSandboxProvider({ ...config, warmPoolSize: 0 })
	try {
		const sandbox = await provider.create()
		const result = await sandbox.exec('sh', ['-c', REACH_PROBE])
		await sandbox.destroy()
		const [verdict, ...listing] = result.stdout.trim().split('\n')
		const ok = verdict === 'agent unreachable'
		return {
			ok,
			ran: true,
			rootListing: listing,
			detail: ok
				? "a workload could not read the agent's /proc/<pid>/environ (the agent is non-dumpable)"
				: "a workload READ the agent's /proc/<pid>/environ: the agent is dumpable",
		}
	} catch (error) {
		return {
			ok: false,
			ran: false,
			detail: `could not start a sandbox for the check: ${error instanceof Error ? error.message : String(error)}`,
		}
	} finally {
		await provider.close()
	}
}
