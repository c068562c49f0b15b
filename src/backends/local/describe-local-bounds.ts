/**
 * The network and limits half of `describeLocalIsolation`: what a sandbox created with no options
 * gets on this host (memory, tasks, CPU share, tmpfs sizes, network mode) and whether allow-all and
 * `diskLimitMb` can be set up here — each from a real check (tool paths, cgroup write access).
 */
import { constants } from 'node:fs'
import { access, realpath } from 'node:fs/promises'
import { totalmem } from 'node:os'
import { EGRESS_LAYER_ENFORCEMENT, type EgressLayer } from '../../host/egress/egress-decision.js'
import type { LimitController } from '../machine/cgroups/cgroup-layout.js'
import { AGENT_TASK_HEADROOM, type DefaultLimitsMode } from '../machine/cgroups/cgroup-limits.js'
import type { CgroupControllerCheck, IsolationCheck } from '../machine/isolation-check.js'
import { missingNetworkTools } from '../machine/network/egress-network.js'
import { missingNetworkToolsLine } from '../machine/network/network-errors.js'
import { checkpointCopyMode } from '../machine/snapshots/cow-volume.js'
import type { CheckpointCopyMode } from '../machine/snapshots/cow-volume-decision.js'
import { resolveSandboxLimits, type TmpfsSizes } from '../machine/spec/sandbox-limits.js'
import type { ResolvedLocalBackendConfig } from './local-backend-config.js'

/** The bounds a sandbox created with no options gets on this host. */
export interface DefaultSandboxBounds {
	/** `backend.defaultLimits`: whether a host that cannot enforce the defaults refuses. */
	readonly mode: DefaultLimitsMode
	/** Whether every default below is enforced on this host (false ⇒ refused, or unbounded under best-effort). */
	readonly enforced: boolean
	readonly memoryLimitMb: number
	/** Tasks the workload may hold (threads count); the sandbox's group adds `agentTaskHeadroom`. */
	readonly maxProcesses: number
	readonly agentTaskHeadroom: number
	/** v1 `cpu.shares` / v2 `cpu.weight`; no CPU quota unless `cpuLimit` is set. */
	readonly cpuShares: number
	readonly cpuWeight: number
	/** tmpfs sizes in bytes (bwrap's `/dev` is bounded by the memory limit only). */
	readonly tmpfs: TmpfsSizes
}

/** Which egress modes work on this host, and what is missing for those that do not. */
export interface LocalNetworkReport {
	/** The egress a sandbox gets without `egress`: deny-all (loopback only). */
	readonly defaultEgress: 'deny-all'
	/** Own network namespace with loopback only (bwrap `--unshare-net`). */
	readonly denyAll: IsolationCheck
	/** slirp4netns + the host-address guard (nft), with what is missing. */
	readonly allowAll: IsolationCheck
	/**
	 * `static` / `resolver`: the capture route (nsenter + ip) and the host's egress proxy, with
	 * what each of its layers enforces.
	 */
	readonly proxied: IsolationCheck & {
		readonly layers: Readonly<Record<EgressLayer, string>>
	}
}

/** What bounds and networking a local sandbox gets on this host (part of the `doctor` report). */
export interface LocalBoundsReport {
	readonly defaultLimits: DefaultSandboxBounds
	readonly network: LocalNetworkReport
	/** Whether `diskLimitMb` can be enforced for an ephemeral workspace here. */
	readonly diskLimit: IsolationCheck
	/**
	 * How filesystem checkpoints share bytes in the state directory: `reflink` (its filesystem
	 * clones), `volume` (a copy-on-write XFS volume), or `copy` (full copies; `ok` false).
	 */
	readonly checkpoints: IsolationCheck & { readonly mode: CheckpointCopyMode }
}

async function describeCheckpoints(stateDir: string): Promise<LocalBoundsReport['checkpoints']> {
	const decision = await checkpointCopyMode(await realpath(stateDir).catch(() => stateDir))
	return { ok: decision.mode !== 'copy', mode: decision.mode, detail: decision.why }
}

function asRootHost(): boolean {
	return process.getuid?.() === 0
}

export async function describeLocalBounds(
	config: ResolvedLocalBackendConfig,
	cgroups: Readonly<Record<LimitController, CgroupControllerCheck>>,
	networkNamespace: IsolationCheck,
): Promise<LocalBoundsReport> {
	const limits = resolveSandboxLimits({}, { totalMemoryBytes: totalmem() })
	const missing = await missingNetworkTools(config.tools)
	const missingForProxy = await missingNetworkTools(config.tools, asRootHost(), ['nsenter', 'ip'])
	const asRoot = process.getuid?.() === 0
	let diskLimit: IsolationCheck = {
		ok: true,
		detail: `loop-mounted ext4 (${config.tools.mkfsExt4})`,
	}
	if (!asRoot) diskLimit = { ok: false, detail: 'needs a root host (loop mount)' }
	else {
		try {
			await access(config.tools.mkfsExt4, constants.X_OK)
		} catch {
			diskLimit = { ok: false, detail: `${config.tools.mkfsExt4} is not executable (e2fsprogs)` }
		}
	}
	return {
		defaultLimits: {
			mode: config.defaultLimits,
			enforced: cgroups.memory.ok && cgroups.pids.ok && cgroups.cpu.ok,
			memoryLimitMb: limits.memoryLimitMb,
			maxProcesses: limits.maxProcesses,
			agentTaskHeadroom: AGENT_TASK_HEADROOM,
			cpuShares: limits.cpuShares,
			cpuWeight: limits.cpuWeight,
			tmpfs: limits.tmpfs,
		},
		network: {
			defaultEgress: 'deny-all',
			denyAll: networkNamespace,
			allowAll:
				missing.length === 0
					? {
							ok: true,
							detail: `slirp4netns (${config.tools.slirp4netns}) with host loopback disabled; nft (${config.tools.nft}) refuses every host address, 10.0.2.2, link-local and IPv6`,
						}
					: { ok: false, detail: missingNetworkToolsLine(missing) },
			proxied: {
				...(missingForProxy.length === 0
					? {
							ok: true,
							detail: `a local default route on the sandbox's loopback (${config.tools.ip} through ${config.tools.nsenter}) sends every TCP connect to the capture helper, and on to this host's egress proxy`,
						}
					: { ok: false, detail: missingNetworkToolsLine(missingForProxy) }),
				layers: EGRESS_LAYER_ENFORCEMENT,
			},
		},
		diskLimit,
		checkpoints: await describeCheckpoints(config.stateDir),
	}
}

/** The problems the bounds add to the report, with the fix. */
export function boundsProblems(report: LocalBoundsReport): string[] {
	const problems: string[] = []
	const { defaultLimits } = report
	if (!defaultLimits.enforced) {
		problems.push(
			defaultLimits.mode === 'required'
				? "the default limits cannot be enforced, so create() refuses: run as root or inside a delegated cgroup (systemd-run --user --scope -p Delegate=yes …), or set backend.defaultLimits: 'best-effort'"
				: "the default limits cannot be enforced and backend.defaultLimits is 'best-effort': sandboxes run without the bounds this host cannot enforce",
		)
	}
	if (!report.network.allowAll.ok) {
		problems.push(`egress allow-all is refused here: ${report.network.allowAll.detail}`)
	}
	if (!report.network.proxied.ok) {
		problems.push(`egress static and resolver are refused here: ${report.network.proxied.detail}`)
	}
	return problems
}
