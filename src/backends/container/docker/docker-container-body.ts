/**
 * The `POST /containers/create` body of one Docker sandbox, as a pure function of what the host
 * prepared. Read-only root, every capability dropped, `no-new-privileges`, the engine's default
 * seccomp profile (Docker's and Podman's both deny the namespace, keyring, `ptrace`-of-others and
 * module calls to an unprivileged process), no network (`NetworkMode: 'none'`), memory (swap
 * included), CPU and pid limits, tmpfs scratch sized from the memory limit, the workspace a host directory of the sandbox's own, the engine's init as
 * pid 1, and the agent bundle and socket directory bound from the host.
 */
import type { SandboxLimits } from '../../machine/spec/sandbox-limits.js'
import {
	CONTAINER_AGENT_BUNDLE,
	CONTAINER_HOME_DIR,
	CONTAINER_SOCKET_DIR,
	CONTAINER_WORKSPACE,
} from '../oci-config.js'
import type { DockerBind } from './docker-layout.js'

/** Every Docker sandbox's containers carry this label (`=1`): what the reaper lists. */
export const DOCKER_SANDBOX_LABEL = 'ai.namzu.sandbox.docker'
/** The sandbox id. */
export const DOCKER_ID_LABEL = 'ai.namzu.sandbox.id'
/** `<hostname>/<pid>/<start time>` of the host process that made it: alive ⇒ never reaped. */
export const DOCKER_OWNER_LABEL = 'ai.namzu.sandbox.owner'
/** The host directory holding its socket (removed with the container). */
export const DOCKER_STATE_LABEL = 'ai.namzu.sandbox.state-root'
/** The unprivileged uid and gid the agent and the workload run as (`nobody`, on every image). */
export const DOCKER_SANDBOX_UID = 65534
/** The image's node is found through `PATH` (`/usr/local/bin` first, as the OCI tiers look). */
export const DOCKER_IMAGE_NODE = '/usr/local/bin/node'

export interface DockerContainerInput {
	readonly image: string
	readonly env: Readonly<Record<string, string>>
	readonly labels: Readonly<Record<string, string>>
	readonly limits: SandboxLimits
	/** Host paths bound in: the agent bundle (read-only), the socket directory, the workspace. */
	readonly agentBundle: string
	readonly socketDir: string
	readonly workspace: string
	/**
	 * The machine layer's seccomp filter: Docker takes the profile inline (`seccomp=<json>`),
	 * Podman's service reads it from a path on the host (`seccomp=<path>`).
	 */
	readonly seccomp: string
	/** The layout's binds (`docker-layout.ts`), parents first. */
	readonly binds: readonly DockerBind[]
	/** The host's own hard limits, so the engine never asks the kernel to raise them. */
	readonly ulimits: { readonly nofile: number; readonly nproc: number }
}

const MIB = 1024 * 1024
const NANO = 1_000_000_000

function tmpfsOptions(bytes: number, mode: string): string {
	return `rw,nosuid,nodev,mode=${mode},size=${bytes}`
}

export function dockerContainerBody(input: DockerContainerInput): Record<string, unknown> {
	const { limits } = input
	const memoryBytes = limits.memoryLimitMb * MIB
	return {
		Image: input.image,
		Cmd: ['node', CONTAINER_AGENT_BUNDLE],
		Entrypoint: [],
		User: `${DOCKER_SANDBOX_UID}:${DOCKER_SANDBOX_UID}`,
		WorkingDir: CONTAINER_WORKSPACE,
		Env: Object.entries(input.env).map(([key, value]) => `${key}=${value}`),
		Labels: input.labels,
		Hostname: 'namzu-sandbox',
		NetworkDisabled: true,
		HostConfig: {
			ReadonlyRootfs: true,
			CapDrop: ['ALL'],
			SecurityOpt: ['no-new-privileges', `seccomp=${input.seccomp}`],
			NetworkMode: 'none',
			Init: true,
			Memory: memoryBytes,
			MemorySwap: memoryBytes,
			PidsLimit: limits.maxProcesses,
			...(limits.cpuLimit === undefined ? {} : { NanoCpus: Math.round(limits.cpuLimit * NANO) }),
			CpuShares: limits.cpuShares,
			Ulimits: [
				{ Name: 'nofile', Soft: input.ulimits.nofile, Hard: input.ulimits.nofile },
				{ Name: 'nproc', Soft: input.ulimits.nproc, Hard: input.ulimits.nproc },
			],
			Tmpfs: {
				'/tmp': tmpfsOptions(limits.tmpfs['/tmp'], '1777'),
				[CONTAINER_HOME_DIR]: tmpfsOptions(limits.tmpfs['/tmp'], '1777'),
				'/var/tmp': tmpfsOptions(limits.tmpfs['/var/tmp'], '1777'),
				'/run': tmpfsOptions(limits.tmpfs['/run'], '755'),
			},
			ShmSize: limits.tmpfs['/dev/shm'],
			Mounts: [
				{ Type: 'bind', Source: input.agentBundle, Target: CONTAINER_AGENT_BUNDLE, ReadOnly: true },
				{ Type: 'bind', Source: input.socketDir, Target: CONTAINER_SOCKET_DIR, ReadOnly: false },
				{ Type: 'bind', Source: input.workspace, Target: CONTAINER_WORKSPACE, ReadOnly: false },
				...input.binds.map((bind) => ({
					Type: 'bind',
					Source: bind.source,
					Target: bind.target,
					ReadOnly: bind.readOnly,
				})),
			],
			RestartPolicy: { Name: 'no' },
			AutoRemove: false,
		},
	}
}

/**
 * Ceilings under which the engine may lower this process's hard limits: an engine's own can be
 * below the host's (Podman caps its `nproc` at 32768) and a container's may not exceed its
 * engine's. `nproc` counts every process of the uid host-wide, so it is no per-sandbox bound:
 * `PidsLimit` (the pids cgroup) is.
 */
export const DOCKER_ULIMIT_CEILINGS = { nofile: 65_536, nproc: 16_384 } as const

/** The hard `nofile` / `nproc` limits of this process (`/proc/self/limits`), under the ceilings. */
export function parseHardLimits(text: string): { nofile: number; nproc: number } {
	const hard = (label: string, ceiling: number) => {
		const line = text.split('\n').find((entry) => entry.startsWith(label))
		const value = Number(line?.slice(label.length).trim().split(/\s+/)[1])
		return Number.isSafeInteger(value) && value > 0 ? Math.min(value, ceiling) : ceiling
	}
	return {
		nofile: hard('Max open files', DOCKER_ULIMIT_CEILINGS.nofile),
		nproc: hard('Max processes', DOCKER_ULIMIT_CEILINGS.nproc),
	}
}
