/**
 * The bounds every local sandbox runs under, as a pure function of what was asked for and of the
 * host's memory: a memory limit, a task limit, a CPU share (and a quota when `cpuLimit` is set),
 * and tmpfs sizes inside the memory limit. A value the caller set is `requested`; one filled in
 * here is `default` — the difference decides whether an unenforceable bound refuses the create
 * with `CgroupLimitsUnavailableError` (requested) or `DefaultLimitsUnavailableError` (default).
 */

import { totalmem } from 'node:os'
import {
	CONFIG_SITE,
	optionalInteger,
	optionalNumber,
} from '../../../contract/argument-validators.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import type { LimitController } from '../cgroups/cgroup-layout.js'
import type { DefaultLimitsMode, RequestedLimits } from '../cgroups/cgroup-limits.js'
import type { CgroupOwner } from '../cgroups/workload-cgroups.js'

const MIB = 1024 * 1024

/** Memory limit of a sandbox created without `memoryLimitMb`, capped at half the host's RAM. */
export const DEFAULT_MEMORY_LIMIT_MB = 2048
/** Task limit of the workload of a sandbox created without `maxProcesses` (threads count). */
export const DEFAULT_MAX_PROCESSES = 512
/** v1 `cpu.shares` every sandbox group gets (the kernel's own default, written explicitly). */
export const DEFAULT_CPU_SHARES = 1024
/** v2 `cpu.weight` every sandbox group gets (the kernel's own default, written explicitly). */
export const DEFAULT_CPU_WEIGHT = 100
/** Smallest quota the kernel accepts is 1 ms per period. */
export const MIN_CPU_LIMIT = 0.01
export const MAX_CPU_LIMIT = 1024
/** ext4 below this has too little room for its own metadata to be a useful workspace. */
export const MIN_DISK_LIMIT_MB = 16
export const MAX_DISK_LIMIT_MB = 16 * 1024 * 1024

export type LimitSource = 'requested' | 'default'

/** Byte sizes of the tmpfs mounts bwrap creates; all of them together stay under the memory limit. */
export interface TmpfsSizes {
	readonly '/tmp': number
	readonly '/var/tmp': number
	readonly '/dev/shm': number
	readonly '/run': number
}

export type TmpfsMount = keyof TmpfsSizes

export interface SandboxLimits {
	readonly memoryLimitMb: number
	readonly memorySource: LimitSource
	/** What the workload may hold (tasks: a thread counts as one). */
	readonly maxProcesses: number
	readonly processesSource: LimitSource
	/** Cores (fractional allowed); absent ⇒ only the share applies. */
	readonly cpuLimit?: number
	readonly cpuShares: number
	readonly cpuWeight: number
	readonly tmpfs: TmpfsSizes
}

export interface RequestedSandboxLimits {
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
}

export interface HostResources {
	readonly totalMemoryBytes: number
}

/** The default memory limit on a host with `totalMemoryBytes` of RAM. */
export function defaultMemoryLimitMb(totalMemoryBytes: number): number {
	const half = Math.floor(totalMemoryBytes / 2 / MIB)
	return Math.max(1, Math.min(DEFAULT_MEMORY_LIMIT_MB, half))
}

/**
 * tmpfs sizes as fractions of the memory limit (1/2 + 1/4 + 1/8 + 1/16 < 1), at least 1 MiB each.
 * tmpfs pages are charged to the writer's memory cgroup, so the memory limit bounds all of them
 * together (and bwrap's unsized `/dev` as well); the sizes make each one fail with ENOSPC first.
 */
export function tmpfsSizesFor(memoryLimitMb: number): TmpfsSizes {
	const part = (divisor: number) => Math.max(MIB, Math.floor((memoryLimitMb * MIB) / divisor))
	return { '/tmp': part(2), '/var/tmp': part(4), '/dev/shm': part(8), '/run': part(16) }
}

export function resolveSandboxLimits(
	requested: RequestedSandboxLimits,
	host: HostResources,
): SandboxLimits {
	const memoryLimitMb = requested.memoryLimitMb ?? defaultMemoryLimitMb(host.totalMemoryBytes)
	return {
		memoryLimitMb,
		memorySource: requested.memoryLimitMb === undefined ? 'default' : 'requested',
		maxProcesses: requested.maxProcesses ?? DEFAULT_MAX_PROCESSES,
		processesSource: requested.maxProcesses === undefined ? 'default' : 'requested',
		...(requested.cpuLimit === undefined ? {} : { cpuLimit: requested.cpuLimit }),
		cpuShares: DEFAULT_CPU_SHARES,
		cpuWeight: DEFAULT_CPU_WEIGHT,
		tmpfs: tmpfsSizesFor(memoryLimitMb),
	}
}

/** `cpuLimit` of a create config: cores, fractional allowed, or undefined. */
export function parseCpuLimit(value: unknown): number | undefined {
	return optionalNumber(CONFIG_SITE, 'cpuLimit', value, { min: MIN_CPU_LIMIT, max: MAX_CPU_LIMIT })
}

/** `diskLimitMb` of a create config: whole MiB, or undefined. */
export function parseDiskLimitMb(value: unknown): number | undefined {
	return optionalInteger(CONFIG_SITE, 'diskLimitMb', value, {
		min: MIN_DISK_LIMIT_MB,
		max: MAX_DISK_LIMIT_MB,
	})
}

/** What `createSandboxCgroups` is asked to enforce for `limits`, defaults marked as such. */
export function cgroupRequestFor(
	limits: SandboxLimits,
	options: {
		readonly defaultLimits: DefaultLimitsMode
		readonly workloadOwner?: CgroupOwner
		readonly trackOnly?: boolean
		readonly recordDirs?: (dirs: readonly string[]) => Promise<void>
	},
): RequestedLimits {
	const defaultsOnly: LimitController[] = []
	if (limits.memorySource === 'default') defaultsOnly.push('memory')
	if (limits.processesSource === 'default') defaultsOnly.push('pids')
	if (limits.cpuLimit === undefined) defaultsOnly.push('cpu')
	return {
		memoryLimitMb: limits.memoryLimitMb,
		maxProcesses: limits.maxProcesses,
		cpuShares: limits.cpuShares,
		cpuWeight: limits.cpuWeight,
		...(limits.cpuLimit === undefined ? {} : { cpuLimit: limits.cpuLimit }),
		defaultsOnly,
		defaultLimits: options.defaultLimits,
		...(options.workloadOwner === undefined ? {} : { workloadOwner: options.workloadOwner }),
		...(options.trackOnly === undefined ? {} : { trackOnly: options.trackOnly }),
		...(options.recordDirs === undefined ? {} : { recordDirs: options.recordDirs }),
	}
}

/** A memory limit this host cannot give is refused, never left to the OOM killer to discover. */
export function refuseAboveHostMemory(
	memoryLimitMb: number | undefined,
	fromDefaults: boolean,
): void {
	const hostMb = Math.floor(totalmem() / (1024 * 1024))
	if (memoryLimitMb === undefined || memoryLimitMb <= hostMb) return
	throw new SandboxConfigError(
		fromDefaults ? 'defaultMemoryLimitMb' : 'memoryLimitMb',
		`${memoryLimitMb} MiB is above this host's memory (${hostMb} MiB); ask for at most that`,
	)
}
