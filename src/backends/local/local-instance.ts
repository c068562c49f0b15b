/**
 * One running local sandbox below the Sandbox object: its directories, cgroups, the agent process
 * (under bwrap unless isolation is 'none') and a transport that has seen `healthz` answer and the
 * privilege probe pass. `release()` takes all of it down; a failed or aborted start leaves nothing.
 * The start itself is `local-start.ts`.
 */

import type { SandboxEnvironment } from '../../contract/sandbox.js'
import type { AgentSandboxOptions } from '../../host/sandbox/agent-sandbox.js'
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import type { LocalSandboxDescriptor } from '../machine/claims/sandbox-descriptor.js'
import type { ChildExit } from '../machine/launch/agent-launcher.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import type { ResolvedLocalBackendConfig } from './local-backend-config.js'

/** Home inside bwrap's private /tmp: writable, gone with the sandbox, never in workspace listings. */
export const SANDBOX_HOME_DIR = '/tmp/home'
export const SANDBOX_HOSTNAME = 'namzu-sandbox'

export interface LocalInstanceContext {
	readonly backend: ResolvedLocalBackendConfig
	readonly agentPath: string
	/** Host environment the agent tuning knobs are read from (default `process.env`). */
	readonly hostEnv?: Readonly<Record<string, string | undefined>>
	/** coreutils `timeout`, the lifetime watchdog of kept-alive sandboxes (default `/usr/bin/timeout`). */
	readonly timeoutPath?: string
	/** coreutils `tail`, the bounded keeper of a kept-alive sandbox's stderr (default `/usr/bin/tail`). */
	readonly tailPath?: string
	/** @internal Tests' resolution and upstream trust for the egress proxy. */
	readonly egressSeam?: EgressTestSeam
}

export interface LocalInstance {
	readonly id: string
	readonly spec: MachineSandboxSpec
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	readonly transport: AgentTransport
	/** The egress proxy's decisions (a proxied network only), for the sandbox's `events()`. */
	readonly egressDecisions?: AgentSandboxOptions['egressDecisions']
	/** The sandbox's `<sandbox>/` cgroup directories (what a checkpoint freezes). */
	readonly cgroupDirs: readonly string[]
	/** Host pid of bwrap (or of the agent under isolation 'none'). */
	readonly pid: number | undefined
	/** Whether the agent process has died (an idle pool member may be OOM-killed, for instance). */
	hasExited(): boolean
	readonly exited: Promise<ChildExit>
	/** Kills every process, removes the cgroups and the state directory. Idempotent. */
	release(): Promise<void>
	/** Set when the sandbox outlives its host (`keepAlive`): the record other processes reopen it by. */
	readonly descriptor?: LocalSandboxDescriptor
}

export function sandboxEnvironment(backend: ResolvedLocalBackendConfig): SandboxEnvironment {
	return backend.isolation === 'bubblewrap' ? 'linux-bwrap' : 'basic'
}
