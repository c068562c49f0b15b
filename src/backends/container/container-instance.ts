/**
 * One running container sandbox below the Sandbox object. The machine-level pieces are the local
 * tier's (the sandbox uid and its locks, the state directory, the host-claims record, the cgroup
 * tree and its `work/` groups, the sized workspace, the agent's unreadable node copy, the
 * listening socket handed over as descriptor 3); what is container-specific is the bundle
 * (`oci-config.ts`) and the runtime commands (`runtime-argv.ts`). `release()` takes all of it down;
 * a failed or aborted start leaves nothing, and a crashed host leaves a record the local reaper
 * undoes (the container's init as the launcher, its cgroups, its runtime state inside the root).
 * The start itself is `container-start.ts`; the claims before it `container-claims.ts`.
 */
import type { AgentSandboxOptions } from '../../host/sandbox/agent-sandbox.js'
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import type { ResolvedContainerBackendConfig } from './container-backend-config.js'
import type { ContainerImage } from './container-image.js'
import type { ResolvedContainerSandboxLayout } from './container-layout.js'
import type { RunscMemoryControl } from './runsc-memory-checkpoints.js'

export interface ContainerInstanceContext {
	readonly backend: ResolvedContainerBackendConfig
	readonly layout: ResolvedContainerSandboxLayout
	/** Resolved once per provider (an OCI layout is unpacked on first use). */
	readonly image: () => Promise<ContainerImage>
	readonly agentPath: string
	readonly hostEnv?: Readonly<Record<string, string | undefined>>
	/** @internal Tests' resolution and upstream trust for the egress proxy. */
	readonly egressSeam?: EgressTestSeam
}

export interface ContainerInstance {
	readonly id: string
	readonly rootDir: string
	readonly transport: AgentTransport
	/** The egress proxy's decisions (a proxied network only), for the sandbox's `events()`. */
	readonly egressDecisions?: AgentSandboxOptions['egressDecisions']
	/** The runtime's container id (`runc list --root <stateRoot>/runtime`). */
	readonly containerId: string
	/** The host state root (`<stateDir>/namzu-sbx-<id>`). */
	readonly stateRoot: string
	/** The workspace's host path (a checkpoint's source, a fork's destination). */
	readonly hostWorkspace: string
	/** The sandbox's and the runtime's cgroup directories (what a checkpoint freezes). */
	readonly cgroupDirs: readonly string[]
	/** Host pid of the container's first process. */
	readonly pid: number | undefined
	hasExited(): boolean
	/** gVisor: the memory checkpoint and rollback of the sandbox's container. */
	readonly memory?: RunscMemoryControl
	/** Kills every process, deletes the container, removes the cgroups and the state root. Idempotent. */
	release(): Promise<void>
}
