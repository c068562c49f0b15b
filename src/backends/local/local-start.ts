/**
 * The start of one local sandbox, as named steps over one state: the checks before anything is
 * claimed, the launch preparation (confined or not), the egress proxy, the cgroups, the agent's
 * command and launch, the network attach, the connection and the ready wait, the privilege probe,
 * and the kept-alive record. Whatever a step made is on the state, so `release()` takes down
 * exactly what exists; a failed or aborted start releases it all before it rethrows.
 */
import { openSync } from 'node:fs'
import { totalmem, userInfo } from 'node:os'
import { join } from 'node:path'
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
	FIRST_WORKLOAD_CGROUP_FD,
	type WorkloadGroup,
	workloadCgroupFds,
} from '../machine/cgroups/workload-cgroups.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import type { LocalSandboxDescriptor } from '../machine/claims/sandbox-descriptor.js'
import { newSandboxId } from '../machine/claims/sandbox-id.js'
import { agentSettingsFrom, buildAgentEnvironment } from '../machine/launch/agent-environment.js'
import { type LaunchedAgentProcess, launchAgentProcess } from '../machine/launch/agent-launcher.js'
import {
	createInheritableListenSocket,
	type InheritableListenSocket,
} from '../machine/launch/agent-listen-socket.js'
import { probeInstancePrivileges } from '../machine/launch/instance-privilege-probe.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../machine/launch/transport-options.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import { LocalEgressUnsupportedError, LocalSandboxCleanupError } from '../machine/machine-errors.js'
import { assertNetworkUsable, readHostAddresses } from '../machine/network/egress-network.js'
import {
	hasSystemTrustBundle,
	type SandboxEgressProxy,
	SYSTEM_TRUST_BUNDLE,
	startSandboxEgressProxy,
} from '../machine/network/sandbox-egress-proxy.js'
import { forkSource } from '../machine/snapshots/checkpoint-verbs.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import {
	cgroupRequestFor,
	resolveSandboxLimits,
	type SandboxLimits,
} from '../machine/spec/sandbox-limits.js'
import { STATE_DIR_PREFIX } from '../machine/workspace/sandbox-directories.js'
import { assertDiskLimitEnforceable } from '../machine/workspace/workspace-disk.js'
import { assertBubblewrapUsable } from './bubblewrap-binary.js'
import {
	type PreparedAllowAll,
	type PreparedProxiedNetwork,
	prepareAllowAll,
	prepareProxiedNetwork,
} from './bwrap-network-attach.js'
import { withLifetimeWatchdog } from './lifetime-watchdog.js'
import {
	type LocalInstance,
	type LocalInstanceContext,
	SANDBOX_HOME_DIR,
	SANDBOX_HOSTNAME,
	sandboxEnvironment,
} from './local-instance.js'
import { assertKeepAliveTools, type KeepAliveTools, recordKeptAlive } from './local-kept-alive.js'
import { type LaunchPreparation, prepareUnconfined } from './local-launch-preparation.js'
import { prepareConfinement } from './sandbox-confinement.js'

/** Pause between dials while the agent is still binding its socket. */
const READY_DIAL_INTERVAL_MS = 20

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
	const tools = await assertKeepAliveTools(context, spec)
	// A fork's checkpoint is read before anything is claimed (CheckpointNotFoundError).
	const fill = spec.from === undefined ? undefined : await forkSource(backend.stateDir, spec.from)
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
	const basis = { id, createdAtMs, limits, tools, prepared, ...(fill ? { fill } : {}) }
	const start = new LocalStart(context, spec, basis, signal)
	return start.run()
}

/** What the start knows before its first step. */
interface LocalStartBasis {
	readonly id: string
	readonly createdAtMs: number
	readonly limits: SandboxLimits
	readonly tools: KeepAliveTools
	readonly prepared: LaunchPreparation
	/** A fork's workspace fill, run before anything of the sandbox starts. */
	readonly fill?: (workspace: string, signal?: AbortSignal) => Promise<void>
}

/** What the command step hands the launch. */
interface AgentCommand {
	readonly argv: readonly string[]
	readonly env: Readonly<Record<string, string>>
	readonly networkFds: readonly 'pipe'[]
}

/** One start's state: what each step made, so that `release()` takes down exactly that. */
class LocalStart {
	readonly #context: LocalInstanceContext
	readonly #spec: MachineSandboxSpec
	readonly #basis: LocalStartBasis
	readonly #signal: AbortSignal | undefined
	readonly #signalOption: { readonly signal?: AbortSignal }
	readonly #confined: boolean
	#cgroups: SandboxCgroups | undefined
	#agent: LaunchedAgentProcess | undefined
	#listener: InheritableListenSocket | undefined
	#network: Promise<AttachedNetwork> | undefined
	#egressProxy: SandboxEgressProxy | undefined
	#releasing: Promise<void> | undefined
	#hostFds: number[] = []
	#allowAll: PreparedAllowAll | undefined
	#proxied: PreparedProxiedNetwork | undefined

	constructor(
		context: LocalInstanceContext,
		spec: MachineSandboxSpec,
		basis: LocalStartBasis,
		signal: AbortSignal | undefined,
	) {
		this.#context = context
		this.#spec = spec
		this.#basis = basis
		this.#signal = signal
		this.#signalOption = signal ? { signal } : {}
		this.#confined = context.backend.isolation === 'bubblewrap'
	}

	async run(): Promise<LocalInstance> {
		const { backend } = this.#context
		const spec = this.#spec
		const { id, prepared } = this.#basis
		try {
			if (prepared.workspaceSeeded !== true) {
				await this.#basis.fill?.(prepared.dirs.workspace, this.#signal)
			}
			await this.#startEgressProxy()
			this.#signal?.throwIfAborted()
			const { oomKillsAtStart, workloadGroups } = await this.#createCgroups()
			const command = this.#agentCommand(workloadGroups)
			const launched = await this.#launch(command)
			this.#network = this.#attachNetwork(launched)
			// Settled by the ready wait below or by teardown; never an unhandled rejection.
			this.#network?.catch(() => undefined)
			await this.#listener?.handOver()
			const transport = this.#connect(launched, oomKillsAtStart)
			// The network is attached while the agent starts; both must be up before anything runs inside.
			await Promise.all([
				waitForAgentReady({
					sandboxId: id,
					agent: launched,
					ready: (readySignal) => transport.healthz(readySignal),
					timeoutMs: backend.readyTimeoutMs,
					...this.#signalOption,
				}),
				this.#network,
			])
			const instance: LocalInstance = {
				id,
				spec,
				rootDir: prepared.dirs.workspace,
				environment: sandboxEnvironment(backend),
				transport,
				...(this.#egressProxy ? { egressDecisions: this.#egressProxy.onDecision } : {}),
				cgroupDirs: this.#cgroups?.dirs ?? [],
				pid: launched.pid,
				hasExited: () => launched.exitStatus() !== undefined,
				exited: launched.exited,
				release: () => this.release(),
			}
			// Without bubblewrap the agent is the host's own user with its capabilities: there is nothing
			// deprivileged to prove, and 'none' is an explicit development-only choice reported as 'basic'.
			if (this.#confined) {
				await probeInstancePrivileges(instance, backend.readyTimeoutMs, this.#signal)
			}
			if (spec.keepAliveMs === undefined) return instance
			return { ...instance, descriptor: await this.#recordKeptAlive(launched, spec.keepAliveMs) }
		} catch (error) {
			closeFds(this.#hostFds)
			await this.release().catch(() => undefined)
			if (this.#signal?.aborted) throw this.#signal.reason
			throw error
		}
	}

	/** Kills every process, removes the cgroups and the state directory. Idempotent. */
	release(): Promise<void> {
		this.#releasing ??= (this.#listener?.discard() ?? Promise.resolve()).then(() =>
			teardown(this.#basis.prepared, this.#cgroups, this.#agent, this.#network, this.#egressProxy),
		)
		return this.#releasing
	}

	/** A proxied egress: the sandbox's own proxy, before anything of it runs. */
	async #startEgressProxy(): Promise<void> {
		const { backend } = this.#context
		const egress = this.#spec.proxiedEgress
		if (!egress) return
		this.#egressProxy = await startSandboxEgressProxy({
			sandboxId: this.#basis.id,
			stateRoot: this.#basis.prepared.dirs.root,
			egress,
			hostAddresses: readHostAddresses(),
			timeoutMs: backend.readyTimeoutMs,
			...((await hasSystemTrustBundle()) ? { systemTrustBundle: SYSTEM_TRUST_BUNDLE } : {}),
			...this.#signalOption,
			...(this.#context.egressSeam ? { seam: this.#context.egressSeam } : {}),
		})
	}

	/** The sandbox's groups, recorded before they are made, and the `work/` descriptors. */
	async #createCgroups(): Promise<{
		readonly oomKillsAtStart: number | undefined
		readonly workloadGroups: readonly WorkloadGroup[]
	}> {
		const { backend } = this.#context
		const { id, limits, prepared } = this.#basis
		const cgroups = await createSandboxCgroups(
			`${STATE_DIR_PREFIX}${id}`,
			cgroupRequestFor(limits, {
				defaultLimits: backend.defaultLimits,
				workloadOwner: prepared.owner,
				// No pid namespace without bwrap: a group is the only way to find double-forked orphans.
				trackOnly: !this.#confined,
				recordDirs: (dirs) => prepared.record({ cgroupDirs: dirs }),
			}),
		)
		this.#cgroups = cgroups
		this.#signal?.throwIfAborted()
		// The agent's death is told from a kill by the OOM killer by this counter rising.
		const oomKillsAtStart = await cgroups?.oomKills()
		const workloadGroups = cgroups?.workloadGroups ?? []
		this.#hostFds = openWorkloadGroupFds(workloadGroups)
		return { oomKillsAtStart, workloadGroups }
	}

	/** The agent's argv (bwrap's, with the network's and the filter's descriptors) and env. */
	#agentCommand(workloadGroups: readonly WorkloadGroup[]): AgentCommand {
		const confined = this.#confined
		const spec = this.#spec
		const { prepared, tools } = this.#basis
		const hostFds = this.#hostFds
		const egressProxy = this.#egressProxy
		// bwrap's own descriptors come after the ones the agent keeps (the listener, then work/).
		const allowAll =
			confined && spec.egress === 'allow-all'
				? prepareAllowAll(FIRST_WORKLOAD_CGROUP_FD + hostFds.length)
				: undefined
		const proxied = egressProxy
			? prepareProxiedNetwork(FIRST_WORKLOAD_CGROUP_FD + hostFds.length)
			: undefined
		this.#allowAll = allowAll
		this.#proxied = proxied
		const env = buildAgentEnvironment({
			workspace: prepared.dirs.workspace,
			homeDir: confined ? SANDBOX_HOME_DIR : prepared.dirs.hostHomeDir,
			nodePath: prepared.workloadNodePath,
			user: confined ? 'root' : userInfo().username,
			callerEnv: { ...egressProxy?.workloadEnv, ...spec.env },
			agentSettings: {
				...prepared.agentSettings,
				...agentSettingsFrom(this.#context.hostEnv ?? process.env),
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
		const argv =
			spec.keepAliveMs === undefined
				? command
				: withLifetimeWatchdog(tools.timeoutPath, spec.keepAliveMs, command)
		return { argv, env, networkFds }
	}

	/** The agent process, on the listening socket it inherits; recorded once it runs. */
	async #launch(command: AgentCommand): Promise<LaunchedAgentProcess> {
		const spec = this.#spec
		const { prepared, tools } = this.#basis
		const { dirs } = prepared
		const listener = await createInheritableListenSocket(dirs.socketPath)
		this.#listener = listener
		const launched = launchAgentProcess({
			argv: withCgroupJoin(this.#cgroups?.procsFiles ?? [], command.argv),
			env: command.env,
			// Not the workspace: bwrap's monitor outlives every rollback, and its working directory
			// would keep the filesystem a rollback replaced mounted (`image-swap.ts`).
			cwd: '/',
			secrets: [
				...Object.values(spec.env),
				...(spec.proxiedEgress?.credentials ?? []).flatMap((entry) => Object.values(entry.headers)),
			],
			listenFd: listener.fd,
			// The seccomp descriptor (the last of hostFds, when there is one) goes after the network's.
			extraFds: seccompLast(
				this.#hostFds,
				command.networkFds,
				prepared.seccompFilter !== undefined,
			),
			...(spec.keepAliveMs === undefined
				? {}
				: {
						outliveHost: {
							stderrPath: join(dirs.root, 'agent.stderr'),
							tailPath: tools.tailPath,
						},
					}),
		})
		this.#agent = launched
		// Named with its start time, so a reaper never signals a process that reused the pid.
		const launcherIdentity =
			launched.pid === undefined ? undefined : await readProcessIdentity(launched.pid)
		if (launcherIdentity) await prepared.record({ launcher: launcherIdentity })
		// The child has its own copies now.
		closeFds(this.#hostFds)
		this.#hostFds = []
		return launched
	}

	/** The network's attach to the launched sandbox (proxied or allow-all), if it has one. */
	#attachNetwork(launched: LaunchedAgentProcess): Promise<AttachedNetwork> | undefined {
		const { backend } = this.#context
		const spec = this.#spec
		const { id, prepared, tools } = this.#basis
		const cgroups = this.#cgroups
		const egressProxy = this.#egressProxy
		const proxiedAttach =
			this.#proxied && egressProxy
				? this.#proxied.attach(launched.pipes, {
						sandboxId: id,
						tools: backend.tools,
						ports: egressProxy.ports,
						timeoutMs: backend.readyTimeoutMs,
						...this.#signalOption,
					})
				: undefined
		return (
			proxiedAttach ??
			this.#allowAll?.attach(launched.pipes, {
				sandboxId: id,
				tools: backend.tools,
				...(cgroups ? { join: cgroups.join } : {}),
				...(spec.keepAliveMs === undefined
					? {}
					: {
							outliveHost: {
								stderrPath: join(prepared.dirs.root, 'network.stderr'),
								tailPath: tools.tailPath,
							},
						}),
				timeoutMs: backend.readyTimeoutMs,
				...this.#signalOption,
			})
		)
	}

	/** The transport to the agent, watching its end as the guest's death. */
	#connect(launched: LaunchedAgentProcess, oomKillsAtStart: number | undefined): AgentTransport {
		const { id, prepared } = this.#basis
		const transport = new AgentTransport(
			{ kind: 'unix', path: prepared.dirs.socketPath },
			{
				connectRetryIntervalMs: READY_DIAL_INTERVAL_MS,
				maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
				// Once the agent is dead no retry can reach it: fail calls at once.
				permanentDialFailure: () => launched.exitStatus() !== undefined,
			},
		)
		// The agent's end is the guest's death (GuestDiedError for every call), unless we ended it.
		const watchedCgroups = this.#cgroups
		transport.liveness.watch(
			launched.exited.then(async (exit) => {
				if (this.#releasing !== undefined) return undefined
				return guestExitOf({
					sandboxId: id,
					exit,
					confined: this.#confined,
					oomKillsAtStart,
					oomKillsAtExit: await watchedCgroups?.oomKills(),
				})
			}),
		)
		return transport
	}

	#recordKeptAlive(
		launched: LaunchedAgentProcess,
		keepAliveMs: number,
	): Promise<LocalSandboxDescriptor> {
		const { id, prepared, createdAtMs } = this.#basis
		const claims = prepared.claims()
		return recordKeptAlive({
			id,
			dirs: prepared.dirs,
			pid: launched.pid,
			cgroupDirs: this.#cgroups?.dirs ?? [],
			backend: this.#context.backend,
			spec: this.#spec,
			createdAtMs,
			keepAliveMs,
			...(claims ? { claims } : {}),
		})
	}
}

/** What the network attach step leaves to stop at teardown. */
interface AttachedNetwork {
	stop(): Promise<void>
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

async function teardown(
	prepared: LaunchPreparation,
	cgroups: SandboxCgroups | undefined,
	agent: LaunchedAgentProcess | undefined,
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
