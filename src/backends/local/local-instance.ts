/**
 * One running local sandbox below the Sandbox object: its directories, cgroups, the agent process
 * (under bwrap unless isolation is 'none') and a transport that has seen `healthz` answer and the
 * privilege probe pass. `release()` takes all of it down; a failed or aborted start leaves nothing.
 */

import { constants, openSync } from 'node:fs'
import { access } from 'node:fs/promises'
import { totalmem, userInfo } from 'node:os'
import { join } from 'node:path'
import type { SandboxEnvironment } from '../../contract/sandbox.js'
import {
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	probeSandboxPrivileges,
} from '../../exec-programs/privilege-probe.js'
import { createAgentSandbox, type EgressDecisionSource } from '../../host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import {
	closeFds,
	createSandboxCgroups,
	openWorkloadGroupFds,
	type SandboxCgroups,
} from '../machine/cgroups/cgroup-limits.js'
import { guestExitOf } from '../machine/cgroups/guest-exit.js'
import {
	type CgroupOwner,
	FIRST_WORKLOAD_CGROUP_FD,
	workloadCgroupFds,
} from '../machine/cgroups/workload-cgroups.js'
import { emptyClaims, type SandboxHostClaims } from '../machine/claims/host-claims.js'
import { writeDescriptor } from '../machine/claims/kept-alive-registry.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import {
	HostClaimsLedger,
	type HostClaimsUpdate,
	releaseHostClaims,
} from '../machine/claims/release-host-claims.js'
import {
	DESCRIPTOR_VERSION,
	type LocalSandboxDescriptor,
} from '../machine/claims/sandbox-descriptor.js'
import { newSandboxId } from '../machine/claims/sandbox-id.js'
import { agentSettingsFrom, buildAgentEnvironment } from '../machine/launch/agent-environment.js'
import { type ChildExit, launchAgentProcess } from '../machine/launch/agent-launcher.js'
import {
	createInheritableListenSocket,
	type InheritableListenSocket,
} from '../machine/launch/agent-listen-socket.js'
import { DEFAULT_TAIL_PATH } from '../machine/launch/stderr-log-keeper.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../machine/launch/transport-options.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import {
	LocalEgressUnsupportedError,
	LocalSandboxCleanupError,
	LocalSandboxStartError,
} from '../machine/machine-errors.js'
import { assertNetworkUsable, readHostAddresses } from '../machine/network/egress-network.js'
import {
	type EgressTestSeam,
	hasSystemTrustBundle,
	type SandboxEgressProxy,
	SYSTEM_TRUST_BUNDLE,
	startSandboxEgressProxy,
} from '../machine/network/sandbox-egress-proxy.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import { cgroupRequestFor, resolveSandboxLimits } from '../machine/spec/sandbox-limits.js'
import {
	createSandboxDirectories,
	removeSandboxDirectories,
	type SandboxDirectories,
	STATE_DIR_PREFIX,
} from '../machine/workspace/sandbox-directories.js'
import {
	assertDiskLimitEnforceable,
	recordAndMountWorkspaceDisk,
} from '../machine/workspace/workspace-disk.js'
import { assertBubblewrapUsable } from './bubblewrap-binary.js'
import {
	type PreparedAllowAll,
	type PreparedProxiedNetwork,
	prepareAllowAll,
	prepareProxiedNetwork,
} from './bwrap-network-attach.js'
import { DEFAULT_TIMEOUT_PATH, withLifetimeWatchdog } from './lifetime-watchdog.js'
import type { ResolvedLocalBackendConfig } from './local-backend-config.js'
import { LocalKeepAliveUnavailableError } from './local-errors.js'
import { type BwrapLaunch, prepareConfinement } from './sandbox-confinement.js'

/** Home inside bwrap's private /tmp: writable, gone with the sandbox, never in workspace listings. */
export const SANDBOX_HOME_DIR = '/tmp/home'
export const SANDBOX_HOSTNAME = 'namzu-sandbox'
/** Pause between dials while the agent is still binding its socket. */
const READY_DIAL_INTERVAL_MS = 20

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

/** What the network attach step leaves to stop at teardown. */
interface AttachedNetwork {
	stop(): Promise<void>
}

export interface LocalInstance {
	readonly id: string
	readonly spec: MachineSandboxSpec
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	readonly transport: AgentTransport
	/** The egress proxy's decisions (a proxied network only), for the sandbox's `events()`. */
	readonly egressDecisions?: EgressDecisionSource
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

function sandboxEnvironment(backend: ResolvedLocalBackendConfig): SandboxEnvironment {
	return backend.isolation === 'bubblewrap' ? 'linux-bwrap' : 'basic'
}

/** What a launch runs and owns before the process starts: directories, command, host claims. */
interface LaunchPreparation {
	readonly dirs: SandboxDirectories
	/**
	 * Host uid/gid the sandbox runs as: its own on a root host, else the host user. Owns the `work/`
	 * cgroups and the sized workspace.
	 */
	readonly owner: CgroupOwner
	/**
	 * Program first: bwrap (behind setpriv with a per-sandbox uid), or the plain agent; `launch`
	 * carries what is known only once the cgroups exist.
	 */
	command(launch: BwrapLaunch): readonly string[]
	/** bwrap's seccomp program (absent under isolation 'none': nothing applies one). */
	readonly seccompFilter?: string
	/** The node the workload finds first on PATH. */
	readonly workloadNodePath: string
	claims(): SandboxHostClaims
	/** Adds to the record: the cgroups before they are made, the launched process once it runs. */
	record(update: HostClaimsUpdate): Promise<void>
	/** Undoes the claims and removes the state root; only once every process is gone. */
	release(): Promise<void>
}

/** The launcher's extra descriptors: the `work/` groups, the network's pipes, then the filter. */
function seccompLast(
	hostFds: readonly number[],
	networkFds: readonly 'pipe'[],
	withFilter: boolean,
): (number | 'pipe')[] {
	if (!withFilter) return [...hostFds, ...networkFds]
	return [...hostFds.slice(0, -1), ...networkFds, ...hostFds.slice(-1)]
}

/** Isolation 'none': the agent is a plain child of the host, as the host user, from the checkout. */
async function prepareUnconfined(
	context: LocalInstanceContext,
	id: string,
	spec: MachineSandboxSpec,
): Promise<LaunchPreparation> {
	const { backend } = context
	const dirs = await createSandboxDirectories(backend.stateDir, id, spec.workingDirectory)
	const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
	// Its record holds no uid or workspace claims, only who owns it and what it made.
	const ledger = new HostClaimsLedger(
		emptyClaims(id, dirs.root, await readProcessIdentity(process.pid)),
	)
	let releasing: Promise<void> | undefined
	const release = () => {
		releasing ??= releaseHostClaims(ledger.current).then(() => removeSandboxDirectories(dirs))
		return releasing
	}
	try {
		await ledger.record({})
		if (spec.diskLimitMb !== undefined) {
			await recordAndMountWorkspaceDisk(ledger, {
				root: dirs.root,
				workspace: dirs.workspace,
				diskLimitMb: spec.diskLimitMb,
				owner,
				mkfsPath: backend.tools.mkfsExt4,
			})
		}
	} catch (error) {
		await release().catch(() => undefined)
		throw error
	}
	return {
		dirs,
		owner,
		command: () => [backend.nodePath, context.agentPath],
		workloadNodePath: backend.nodePath,
		claims: () => ledger.current,
		record: (update) => ledger.record(update),
		release,
	}
}

export async function startLocalInstance(
	context: LocalInstanceContext,
	spec: MachineSandboxSpec,
	signal?: AbortSignal,
): Promise<LocalInstance> {
	signal?.throwIfAborted()
	const { backend } = context
	const confined = backend.isolation === 'bubblewrap'
	if (!confined && spec.proxiedEgress) {
		throw new LocalEgressUnsupportedError(spec.proxiedEgress.kind, "isolation 'none'")
	}
	if (confined) await assertBubblewrapUsable(backend.bwrapPath)
	if (confined) await assertNetworkUsable(spec.egress, backend.tools)
	if (spec.diskLimitMb !== undefined) {
		await assertDiskLimitEnforceable({
			diskLimitMb: spec.diskLimitMb,
			callerOwnsWorkspace: spec.workingDirectory !== undefined,
			mkfsPath: backend.tools.mkfsExt4,
			asRoot: process.getuid?.() === 0,
		})
	}
	const limits = resolveSandboxLimits(spec, { totalMemoryBytes: totalmem() })
	const timeoutPath = context.timeoutPath ?? DEFAULT_TIMEOUT_PATH
	const tailPath = context.tailPath ?? DEFAULT_TAIL_PATH
	if (spec.keepAliveMs !== undefined) {
		await access(timeoutPath, constants.X_OK).catch((error: unknown) => {
			throw new LocalKeepAliveUnavailableError(timeoutPath, { cause: error })
		})
		await access(tailPath, constants.X_OK).catch((error: unknown) => {
			throw new LocalKeepAliveUnavailableError(timeoutPath, { cause: error }, tailPath)
		})
	}
	signal?.throwIfAborted()
	const createdAtMs = Date.now()
	const id = newSandboxId()
	const prepared: LaunchPreparation = confined
		? await prepareConfinement({
				id,
				backend,
				spec,
				agentPath: context.agentPath,
				homeDir: SANDBOX_HOME_DIR,
				hostname: SANDBOX_HOSTNAME,
				tmpfsSizes: limits.tmpfs,
				...(signal ? { signal } : {}),
			})
		: await prepareUnconfined(context, id, spec)
	const { dirs } = prepared
	let cgroups: SandboxCgroups | undefined
	let agent: ReturnType<typeof launchAgentProcess> | undefined
	let listener: InheritableListenSocket | undefined
	let network: Promise<AttachedNetwork> | undefined
	let egressProxy: SandboxEgressProxy | undefined
	let releasing: Promise<void> | undefined
	const release = () => {
		releasing ??= (listener?.discard() ?? Promise.resolve()).then(() =>
			teardown(prepared, cgroups, agent, network, egressProxy),
		)
		return releasing
	}
	let hostFds: number[] = []
	let allowAll: PreparedAllowAll | undefined
	let proxied: PreparedProxiedNetwork | undefined
	try {
		if (spec.proxiedEgress) {
			egressProxy = await startSandboxEgressProxy({
				sandboxId: id,
				stateRoot: dirs.root,
				egress: spec.proxiedEgress,
				hostAddresses: readHostAddresses(),
				timeoutMs: backend.readyTimeoutMs,
				...((await hasSystemTrustBundle()) ? { systemTrustBundle: SYSTEM_TRUST_BUNDLE } : {}),
				...(signal ? { signal } : {}),
				...(context.egressSeam ? { seam: context.egressSeam } : {}),
			})
		}
		signal?.throwIfAborted()
		cgroups = await createSandboxCgroups(
			`${STATE_DIR_PREFIX}${id}`,
			cgroupRequestFor(limits, {
				defaultLimits: backend.defaultLimits,
				workloadOwner: prepared.owner,
				// No pid namespace without bwrap: a group is the only way to find double-forked orphans.
				trackOnly: !confined,
				recordDirs: (dirs) => prepared.record({ cgroupDirs: dirs }),
			}),
		)
		signal?.throwIfAborted()
		// The agent's death is told from a kill by the OOM killer by this counter rising.
		const oomKillsAtStart = await cgroups?.oomKills()
		const workloadGroups = cgroups?.workloadGroups ?? []
		hostFds = openWorkloadGroupFds(workloadGroups)
		// bwrap's own descriptors come after the ones the agent keeps (the listener, then work/).
		allowAll =
			confined && spec.egress === 'allow-all'
				? prepareAllowAll(FIRST_WORKLOAD_CGROUP_FD + hostFds.length)
				: undefined
		proxied = egressProxy
			? prepareProxiedNetwork(FIRST_WORKLOAD_CGROUP_FD + hostFds.length)
			: undefined
		const homeDir = confined ? SANDBOX_HOME_DIR : dirs.hostHomeDir
		const env = buildAgentEnvironment({
			workspace: dirs.workspace,
			homeDir,
			nodePath: prepared.workloadNodePath,
			user: confined ? 'root' : userInfo().username,
			callerEnv: { ...egressProxy?.workloadEnv, ...spec.env },
			agentSettings: {
				...agentSettingsFrom(context.hostEnv ?? process.env),
				...egressProxy?.agentSettings,
			},
			workloadCgroups: workloadCgroupFds(workloadGroups),
		})
		const networkFds = allowAll?.extraFds ?? proxied?.extraFds ?? []
		if (prepared.seccompFilter !== undefined) hostFds.push(openSync(prepared.seccompFilter, 'r'))
		const command = prepared.command({
			networkArgs: allowAll?.bwrapArgs ?? proxied?.bwrapArgs ?? [],
			unshareCgroupNamespace: !workloadGroups.some((group) => group.version === 2),
			...(prepared.seccompFilter === undefined
				? {}
				: { seccompFd: FIRST_WORKLOAD_CGROUP_FD + hostFds.length - 1 + networkFds.length }),
		})
		// A kept-alive sandbox runs under its lifetime watchdog, which becomes bwrap's parent: bwrap
		// keeps --die-with-parent, so the watchdog firing (or being killed) takes the sandbox down.
		const supervised =
			spec.keepAliveMs === undefined
				? command
				: withLifetimeWatchdog(timeoutPath, spec.keepAliveMs, command)
		listener = await createInheritableListenSocket(dirs.socketPath)
		const launched = launchAgentProcess({
			argv: withCgroupJoin(cgroups?.procsFiles ?? [], supervised),
			env,
			cwd: dirs.workspace,
			secrets: [
				...Object.values(spec.env),
				...(spec.proxiedEgress?.credentials ?? []).flatMap((entry) => Object.values(entry.headers)),
			],
			listenFd: listener.fd,
			// The seccomp descriptor (the last of hostFds, when there is one) goes after the network's.
			extraFds: seccompLast(hostFds, networkFds, prepared.seccompFilter !== undefined),
			...(spec.keepAliveMs === undefined
				? {}
				: { outliveHost: { stderrPath: join(dirs.root, 'agent.stderr'), tailPath } }),
		})
		agent = launched
		// Named with its start time, so a reaper never signals a process that reused the pid.
		const launcherIdentity =
			launched.pid === undefined ? undefined : await readProcessIdentity(launched.pid)
		if (launcherIdentity) await prepared.record({ launcher: launcherIdentity })
		// The child has its own copies now.
		closeFds(hostFds)
		hostFds = []
		const proxiedAttach =
			proxied && egressProxy
				? proxied.attach(launched.pipes, {
						sandboxId: id,
						tools: backend.tools,
						ports: egressProxy.ports,
						timeoutMs: backend.readyTimeoutMs,
						...(signal ? { signal } : {}),
					})
				: undefined
		network =
			proxiedAttach ??
			allowAll?.attach(launched.pipes, {
				sandboxId: id,
				tools: backend.tools,
				...(cgroups ? { join: cgroups.join } : {}),
				...(spec.keepAliveMs === undefined
					? {}
					: { outliveHost: { stderrPath: join(dirs.root, 'network.stderr'), tailPath } }),
				timeoutMs: backend.readyTimeoutMs,
				...(signal ? { signal } : {}),
			})
		// Settled by the ready wait below or by teardown; never an unhandled rejection.
		network?.catch(() => undefined)
		await listener.handOver()
		const transport = new AgentTransport(
			{ kind: 'unix', path: dirs.socketPath },
			{
				connectRetryIntervalMs: READY_DIAL_INTERVAL_MS,
				maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
				// Once the agent is dead no retry can reach it: fail calls at once.
				permanentDialFailure: () => launched.exitStatus() !== undefined,
			},
		)
		// The agent's end is the guest's death (GuestDiedError for every call), unless we ended it.
		const watchedCgroups = cgroups
		transport.liveness.watch(
			launched.exited.then(async (exit) => {
				if (releasing !== undefined) return undefined
				return guestExitOf({
					sandboxId: id,
					exit,
					confined,
					oomKillsAtStart,
					oomKillsAtExit: await watchedCgroups?.oomKills(),
				})
			}),
		)
		// The network is attached while the agent starts; both must be up before anything runs inside.
		await Promise.all([
			waitForAgentReady({
				sandboxId: id,
				agent: launched,
				ready: (readySignal) => transport.healthz(readySignal),
				timeoutMs: backend.readyTimeoutMs,
				...(signal ? { signal } : {}),
			}),
			network,
		])
		const instance: LocalInstance = {
			id,
			spec,
			rootDir: dirs.workspace,
			environment: sandboxEnvironment(backend),
			transport,
			...(egressProxy ? { egressDecisions: egressProxy.onDecision } : {}),
			pid: launched.pid,
			hasExited: () => launched.exitStatus() !== undefined,
			exited: launched.exited,
			release,
		}
		// Without bubblewrap the agent is the host's own user with its capabilities: there is nothing
		// deprivileged to prove, and 'none' is an explicit development-only choice reported as 'basic'.
		if (confined) await probeInstance(instance, backend.readyTimeoutMs, signal)
		if (spec.keepAliveMs === undefined) return instance
		const claims = prepared.claims()
		const descriptor = await recordKeptAlive({
			id,
			dirs,
			pid: launched.pid,
			cgroupDirs: cgroups?.dirs ?? [],
			backend,
			spec,
			createdAtMs,
			keepAliveMs: spec.keepAliveMs,
			...(claims ? { claims } : {}),
		})
		return { ...instance, descriptor }
	} catch (error) {
		closeFds(hostFds)
		await release().catch(() => undefined)
		if (signal?.aborted) throw signal.reason
		throw error
	}
}

interface KeptAliveRecordInput {
	readonly id: string
	readonly dirs: SandboxDirectories
	readonly pid: number | undefined
	readonly cgroupDirs: readonly string[]
	readonly backend: ResolvedLocalBackendConfig
	readonly spec: MachineSandboxSpec
	readonly createdAtMs: number
	readonly keepAliveMs: number
	readonly claims?: SandboxHostClaims
}

/** Writes the descriptor a later host process reopens or destroys the sandbox by. */
async function recordKeptAlive(input: KeptAliveRecordInput): Promise<LocalSandboxDescriptor> {
	const identity = input.pid === undefined ? undefined : await readProcessIdentity(input.pid)
	if (identity === undefined) {
		throw new LocalSandboxStartError(
			input.id,
			'the kept-alive sandbox launcher vanished at start',
			{
				stderrTail: '',
			},
		)
	}
	const descriptor: LocalSandboxDescriptor = {
		version: DESCRIPTOR_VERSION,
		id: input.id,
		socketPath: input.dirs.socketPath,
		pid: identity.pid,
		pidStartTime: identity.startTime,
		stateRoot: input.dirs.root,
		workspace: input.dirs.workspace,
		callerOwnsWorkspace: input.dirs.callerOwnsWorkspace,
		cgroupDirs: input.cgroupDirs,
		isolation: input.backend.isolation,
		environment: sandboxEnvironment(input.backend),
		createdAtMs: input.createdAtMs,
		expiresAtMs: input.createdAtMs + input.keepAliveMs,
		...(input.spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: input.spec.timeoutMs }),
		...(input.claims ? { claims: input.claims } : {}),
	}
	await writeDescriptor(descriptor)
	return descriptor
}

/** Runs the privilege probe through a throwaway Sandbox over the instance's transport. */
async function probeInstance(
	instance: LocalInstance,
	readyTimeoutMs: number,
	signal: AbortSignal | undefined,
): Promise<void> {
	const probe = createAgentSandbox({
		id: instance.id,
		transport: instance.transport,
		rootDir: instance.rootDir,
		environment: instance.environment,
		release: async () => undefined,
	})
	try {
		await probeSandboxPrivileges(probe, signal, {
			timeoutMs: Math.min(readyTimeoutMs, PRIVILEGE_PROBE_MAX_TIMEOUT_MS),
		})
	} finally {
		await probe.destroy().catch(() => undefined)
	}
}

async function teardown(
	prepared: LaunchPreparation,
	cgroups: SandboxCgroups | undefined,
	agent: ReturnType<typeof launchAgentProcess> | undefined,
	network: Promise<AttachedNetwork> | undefined,
	egressProxy: SandboxEgressProxy | undefined,
): Promise<void> {
	const failures: unknown[] = []
	// Both at once: a frozen per-command group holds its processes until the cgroup side thaws it.
	await Promise.all([
		agent?.kill(),
		cgroups?.remove().catch((error: unknown) => failures.push(error)),
	])
	await network?.then((attached) => attached.stop()).catch(() => undefined)
	await egressProxy?.close().catch(() => undefined)
	// Claims (the sized workspace, workspace ownership, staging mounts, the uid) only once no
	// process is left.
	await prepared.release().catch((error: unknown) => failures.push(error))
	const failed = LocalSandboxCleanupError.ofFailures(failures)
	if (failed) throw failed
}
