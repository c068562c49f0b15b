/**
 * The start of one container sandbox after its host claims are made, as named steps over one
 * state: the agent's files, the cgroups, the bundle, the runtime's `create`, the connection, the
 * runtime's `start` and the ready wait. Whatever a step made is on the state, so `release()` takes
 * down exactly what exists; a failed or aborted start releases it all before it rethrows.
 */
import { chown, mkdir, readFile } from 'node:fs/promises'
import { totalmem } from 'node:os'
import { join } from 'node:path'
import { reidentifyRestoredAgent } from '../../host/lifecycle/restored-agent.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import {
	adoptSandboxCgroups,
	closeFds,
	createSandboxCgroups,
	openWorkloadGroupFds,
	type SandboxCgroups,
} from '../machine/cgroups/cgroup-limits.js'
import { guestExitOf } from '../machine/cgroups/guest-exit.js'
import type { WorkloadGroup } from '../machine/cgroups/workload-cgroups.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import { releaseHostClaims, removeStateRoot } from '../machine/claims/release-host-claims.js'
import {
	createInheritableListenSocket,
	type InheritableListenSocket,
} from '../machine/launch/agent-listen-socket.js'
import { probeInstancePrivileges } from '../machine/launch/instance-privilege-probe.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../machine/launch/transport-options.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import { LocalSandboxCleanupError, LocalSandboxStartError } from '../machine/machine-errors.js'
import {
	cgroupRequestFor,
	resolveSandboxLimits,
	type SandboxLimits,
} from '../machine/spec/sandbox-limits.js'
import {
	type EphemeralWorkspace,
	prepareEphemeralWorkspace,
} from '../machine/workspace/volume-workspace.js'
import { type AgentFiles, prepareAgentFiles } from './container-agent-files.js'
import {
	AGENT_SOCKET_NAME,
	adoptAgentSocket,
	agentReadyCheck,
	asLaunched,
} from './container-agent-socket.js'
import { writeContainerBundle } from './container-bundle.js'
import {
	type ContainerClaims,
	checkContainerHost,
	claimContainerSandbox,
} from './container-claims.js'
import type { ContainerImage } from './container-image.js'
import type { ContainerInstance, ContainerInstanceContext } from './container-instance.js'
import { under } from './container-layout-mounts.js'
import { type ContainerNetwork, prepareContainerNetwork } from './container-network.js'
import {
	type CreatedContainer,
	createContainer,
	deleteRuntimeContainer,
	runRuntimeCommand,
} from './container-process.js'
import type { ContainerSandboxSpec } from './container-sandbox-spec.js'
import { CONTAINER_WORKSPACE } from './oci-config.js'
import { RunscIncarnations } from './runsc-incarnations.js'
import { containerForkSource, type RunscRestoreSource } from './runsc-memory-checkpoints.js'
import { createArgv, type RuntimeInvocation, startArgv } from './runtime-argv.js'
import { runtimeCgroupDirs } from './runtime-cgroup-dirs.js'

/** What the cgroup step leaves for the later ones. */
interface CgroupsMade {
	readonly oomKillsAtStart: number | undefined
	readonly workloadGroups: readonly WorkloadGroup[]
}

export async function startContainerInstance(
	context: ContainerInstanceContext,
	spec: ContainerSandboxSpec,
	signal?: AbortSignal,
): Promise<ContainerInstance> {
	signal?.throwIfAborted()
	const image = await checkContainerHost(context, spec)
	const limits = resolveSandboxLimits(spec, { totalMemoryBytes: totalmem() })
	// A fork's checkpoint is read before anything is claimed (CheckpointNotFoundError).
	const source =
		spec.from === undefined ? undefined : await containerForkSource(context.backend, spec.from)
	signal?.throwIfAborted()
	const claims = await claimContainerSandbox(context.backend)
	return new ContainerStart(context, spec, image, limits, claims, signal, source?.restore).run(
		source?.fill,
	)
}

/** One start's state: what each step made, so that `release()` takes down exactly that. */
class ContainerStart {
	readonly #context: ContainerInstanceContext
	readonly #spec: ContainerSandboxSpec
	readonly #image: ContainerImage
	readonly #limits: SandboxLimits
	readonly #claims: ContainerClaims
	readonly #signal: AbortSignal | undefined
	readonly #signalOption: { readonly signal?: AbortSignal }
	readonly #invocation: RuntimeInvocation
	/**
	 * gVisor has its own kernel: it takes neither a listener nor host cgroup descriptors, so its
	 * agent binds a socket in a directory of its own (reaching the host through
	 * --host-uds=create), the sandbox's groups bound the whole sandbox from outside, and its
	 * loader must read the binaries it runs (its ptrace is restricted to descendants instead).
	 */
	readonly #hostUds: boolean
	/** A fork of a gVisor memory checkpoint: the image it is restored from. */
	readonly #restore: RunscRestoreSource | undefined
	/** Who the sandbox's files belong to: its uid, or the uid a restored image's processes run as. */
	readonly #fileOwner: { readonly uid: number; readonly gid: number }
	/** gVisor's containers of this sandbox, one after another (memory checkpoints, rollbacks). */
	#incarnations: RunscIncarnations | undefined
	#cgroups: SandboxCgroups | undefined
	#runtimeGroups: SandboxCgroups | undefined
	#listener: InheritableListenSocket | undefined
	#container: CreatedContainer | undefined
	#network: ContainerNetwork | undefined
	#hostFds: number[] = []
	#releasing: Promise<void> | undefined

	constructor(
		context: ContainerInstanceContext,
		spec: ContainerSandboxSpec,
		image: ContainerImage,
		limits: SandboxLimits,
		claims: ContainerClaims,
		signal: AbortSignal | undefined,
		restore?: RunscRestoreSource,
	) {
		this.#context = context
		this.#restore = restore
		this.#fileOwner = restore?.owner ?? claims.owner
		this.#spec = spec
		this.#image = image
		this.#limits = limits
		this.#claims = claims
		this.#signal = signal
		this.#signalOption = signal ? { signal } : {}
		this.#invocation = invocationOf(context.backend, claims.dirs.root)
		this.#hostUds = context.backend.runtime === 'runsc'
	}

	async run(
		fill?: (workspace: string, signal?: AbortSignal) => Promise<void>,
	): Promise<ContainerInstance> {
		const { backend } = this.#context
		const { id, name, dirs } = this.#claims
		try {
			const workspace = await this.#recordWorkspace()
			if (workspace !== 'seeded') await fill?.(dirs.workspace, this.#signal)
			const files = await prepareAgentFiles(this.#context, this.#image, this.#claims, this.#signal)
			const groups = await this.#createCgroups()
			const socketDir = await this.#socketDir()
			const network = await prepareContainerNetwork({
				sandboxId: id,
				stateRoot: dirs.root,
				spec: this.#spec,
				rootfs: this.#image.rootfs,
				tools: backend.tools,
				timeoutMs: backend.readyTimeoutMs,
				...this.#signalOption,
				...(this.#context.egressSeam ? { seam: this.#context.egressSeam } : {}),
			})
			this.#network = network
			const bundle = await this.#writeBundle(files, groups.workloadGroups, socketDir, network)
			const transport = this.#transport()
			const incarnations =
				socketDir === undefined ? undefined : this.#incarnationsOf(bundle, socketDir, transport)
			this.#incarnations = incarnations
			let pid: number
			if (this.#restore === undefined || incarnations === undefined) {
				const made = await this.#createContainer(bundle, network)
				pid = made.pid
				incarnations?.adopt(made.created)
				await this.#listener?.handOver()
				this.#watch(transport, groups.oomKillsAtStart)
				await this.#startAgent(made.created, pid, transport, socketDir, network)
			} else {
				await incarnations.launch(this.#restore.imagePath, this.#signal)
				pid = Number(await readFile(join(dirs.root, 'container.pid'), 'utf8'))
				this.#watch(transport, groups.oomKillsAtStart)
				// Before anyone else reaches it: fresh entropy and a boot id of its own.
				await reidentifyRestoredAgent(transport, this.#signalOption)
			}
			const instance: ContainerInstance = {
				id,
				rootDir: CONTAINER_WORKSPACE,
				transport,
				...(network.egressDecisions ? { egressDecisions: network.egressDecisions } : {}),
				containerId: name,
				stateRoot: dirs.root,
				hostWorkspace: dirs.workspace,
				cgroupDirs: [...(this.#cgroups?.dirs ?? []), ...(this.#runtimeGroups?.dirs ?? [])],
				pid: Number.isSafeInteger(pid) ? pid : undefined,
				hasExited: () => this.#isGone(),
				release: () => this.release(),
				...(incarnations === undefined ? {} : { memory: incarnations }),
			}
			// gVisor's /proc/<pid>/status carries no capability or no_new_privs lines, so there is
			// nothing for the probe to read; there the OCI config (no capability, no new privileges) and
			// the sentry's own confinement are what hold.
			if (!this.#hostUds) {
				await probeInstancePrivileges(
					{ ...instance, environment: 'linux-namespace' },
					backend.readyTimeoutMs,
					this.#signal,
				)
			}
			return instance
		} catch (error) {
			closeFds(this.#hostFds)
			await this.release().catch(() => undefined)
			if (this.#signal?.aborted) throw this.#signal.reason
			throw error
		}
	}

	/** Kills every process, deletes the container, removes the cgroups and the state root. */
	release(): Promise<void> {
		this.#releasing ??= this.#teardown()
		return this.#releasing
	}

	async #teardown(): Promise<void> {
		const { name, dirs, ledger } = this.#claims
		await this.#listener?.discard()
		const failures: unknown[] = []
		// Under gVisor, the container deleted below is the last one: no checkpoint or rollback
		// replaces it after this.
		await this.#incarnations?.quiesce()
		// All at once: a frozen per-command group holds its processes until the cgroup side thaws
		// it, and the runtime's delete waits for the container's init.
		await Promise.all([
			this.#container === undefined && this.#incarnations?.current === undefined
				? undefined
				: deleteRuntimeContainer(this.#invocation, this.#incarnations?.containerId ?? name).catch(
						(error: unknown) => failures.push(error),
					),
			this.#incarnations?.retired(),
			this.#cgroups?.remove().catch((error: unknown) => failures.push(error)),
		])
		await this.#runtimeGroups?.remove().catch((error: unknown) => failures.push(error))
		// After the container is gone: nothing inside is left to use the network.
		await this.#network?.stop().catch((error: unknown) => failures.push(error))
		await releaseHostClaims(ledger.current)
			.then(() => removeStateRoot(dirs.root))
			.catch((error: unknown) => failures.push(error))
		const failed = LocalSandboxCleanupError.ofFailures(failures)
		if (failed) throw failed
	}

	/**
	 * The record exists before anything else is made; the workspace gets its filesystem (a sized
	 * one, or the copy-on-write volume where the runtime takes checkpoints).
	 */
	async #recordWorkspace(): Promise<EphemeralWorkspace> {
		const { ledger, dirs, id } = this.#claims
		await ledger.record({})
		// A memory checkpoint's sized workspace is an image too: its fork starts from a clone of it
		// (the restored guest finds the very files it had, inode for inode).
		const { from } = this.#spec
		return prepareEphemeralWorkspace(ledger, {
			root: dirs.root,
			workspace: dirs.workspace,
			diskLimitMb: this.#spec.diskLimitMb,
			owner: this.#fileOwner,
			mkfsPath: this.#context.backend.tools.mkfsExt4,
			sandboxId: id,
			checkpointable: true,
			...(from === undefined ? {} : { from }),
		})
	}

	/** The sandbox's groups, the runtime's own beside them, and the `work/` descriptors. */
	async #createCgroups(): Promise<CgroupsMade> {
		const { backend } = this.#context
		const { name, owner, ledger } = this.#claims
		const request = cgroupRequestFor(this.#limits, {
			defaultLimits: backend.defaultLimits,
			workloadOwner: owner,
			recordDirs: (groupDirs) => ledger.record({ cgroupDirs: groupDirs }),
		})
		const cgroups = await createSandboxCgroups(name, request)
		this.#cgroups = cgroups
		this.#signal?.throwIfAborted()
		const joinedDirs = (cgroups?.procsFiles ?? []).map((file) =>
			file.replace(/\/cgroup\.procs$/, ''),
		)
		// crun manages no cgroups (runtime-argv.ts): its container stays in the sandbox's own.
		const containerDirs =
			backend.runtime === 'crun'
				? []
				: runtimeCgroupDirs({
						mountinfo: await readFile('/proc/self/mountinfo', 'utf8'),
						membership: await readFile('/proc/self/cgroup', 'utf8'),
						joinedDirs,
						name,
					})
		const outside = containerDirs.filter((dir) => !joinedDirs.some((joined) => under(dir, joined)))
		// Named before the runtime makes them: the reaper of a crashed host removes them too.
		await ledger.record({ cgroupDirs: [...(cgroups?.dirs ?? []), ...outside] })
		this.#runtimeGroups = adoptSandboxCgroups(outside)
		const oomKillsAtStart = await cgroups?.oomKills()
		const workloadGroups = this.#hostUds ? [] : (cgroups?.workloadGroups ?? [])
		this.#hostFds = openWorkloadGroupFds(workloadGroups)
		return { oomKillsAtStart, workloadGroups }
	}

	/** gVisor's agent binds its socket in a directory of the sandbox uid's; other runtimes none. */
	async #socketDir(): Promise<string | undefined> {
		if (!this.#hostUds) return undefined
		const { dirs } = this.#claims
		const socketDir = join(dirs.root, 'uds')
		await mkdir(socketDir, { mode: 0o700 })
		await chown(socketDir, this.#fileOwner.uid, this.#fileOwner.gid)
		return socketDir
	}

	/** The OCI bundle: the agent's environment and command, the mounts, the seccomp filter. */
	#writeBundle(
		files: AgentFiles,
		workloadGroups: readonly WorkloadGroup[],
		socketDir: string | undefined,
		network: ContainerNetwork,
	): Promise<string> {
		const { id, name, dirs } = this.#claims
		return writeContainerBundle({
			context: this.#context,
			spec: this.#spec,
			image: this.#image,
			limits: this.#limits,
			sandbox: { id, name, root: dirs.root, workspace: dirs.workspace, owner: this.#fileOwner },
			files,
			workloadGroups,
			socketDir,
			network,
		})
	}

	/** The runtime's `create`: the container exists, its init waits; the network goes in now. */
	async #createContainer(
		bundle: string,
		network: ContainerNetwork,
	): Promise<{ readonly created: CreatedContainer; readonly pid: number }> {
		const { id, name, dirs, ledger } = this.#claims
		const listener = this.#hostUds
			? undefined
			: await createInheritableListenSocket(dirs.socketPath)
		this.#listener = listener
		const pidFile = join(dirs.root, 'container.pid')
		const created = await createContainer({
			runtime: this.#context.backend.runtime,
			argv: withCgroupJoin(
				this.#cgroups?.procsFiles ?? [],
				createArgv(this.#invocation, {
					containerId: name,
					bundle,
					pidFile,
					preserveFds: listener === undefined ? 0 : 1 + this.#hostFds.length,
				}),
			),
			fds: listener === undefined ? [] : [listener.fd, ...this.#hostFds],
			secrets: [...Object.values(this.#spec.env), ...network.secrets],
			...this.#signalOption,
		})
		this.#container = created
		const pid = Number((await readFile(pidFile, 'utf8')).trim())
		const launcher = Number.isSafeInteger(pid) ? await readProcessIdentity(pid) : undefined
		// Named with its start time, so a reaper never signals a process that reused the pid.
		if (launcher) await ledger.record({ launcher })
		closeFds(this.#hostFds)
		this.#hostFds = []
		if (this.#spec.egress !== 'deny-all') {
			if (!Number.isSafeInteger(pid)) {
				throw new LocalSandboxStartError(id, "the runtime's pid file holds no pid", {
					stderrTail: created.outputTail(),
				})
			}
			// Nothing of the workload runs before `start`: its network is in place before anything uses it.
			await network.attach(pid, this.#cgroups?.join)
		}
		return { created, pid }
	}

	/** Whether the sandbox's container is gone (and, under gVisor, nothing replaces it). */
	#isGone(): boolean {
		if (this.#incarnations !== undefined) return this.#incarnations.isGone()
		return this.#container?.isGone() === true
	}

	/** The transport to the agent. */
	#transport(): AgentTransport {
		const { backend } = this.#context
		return new AgentTransport(
			{ kind: 'unix', path: this.#claims.dirs.socketPath },
			{
				connectRetryIntervalMs: backend.readyPollIntervalMs,
				maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
				permanentDialFailure: () => this.#isGone(),
			},
		)
	}

	/** gVisor's succession of containers for this sandbox. */
	#incarnationsOf(bundle: string, socketDir: string, transport: AgentTransport): RunscIncarnations {
		const { id, name, dirs, ledger } = this.#claims
		return new RunscIncarnations(
			{
				sandboxId: id,
				name,
				invocation: this.#invocation,
				stateRoot: dirs.root,
				bundle,
				socketDir,
				socketPath: dirs.socketPath,
				workspace: dirs.workspace,
				owner: this.#fileOwner,
				procsFiles: this.#cgroups?.procsFiles ?? [],
				secrets: Object.values(this.#spec.env),
				readyTimeoutMs: this.#context.backend.readyTimeoutMs,
				recordLauncher: async (pid) => {
					const launcher = await readProcessIdentity(pid)
					if (launcher) await ledger.record({ launcher })
				},
			},
			transport,
		)
	}

	/** The container's end (under gVisor: the last container's) as the guest's death. */
	#watch(transport: AgentTransport, oomKillsAtStart: number | undefined): void {
		const { id } = this.#claims
		const watchedCgroups = this.#cgroups
		const gone = this.#incarnations?.gone() ?? this.#container?.gone ?? Promise.resolve()
		transport.liveness.watch(
			gone.then(async () => {
				if (this.#releasing !== undefined) return undefined
				return guestExitOf({
					sandboxId: id,
					exit: { code: null, signal: null },
					confined: true,
					oomKillsAtStart,
					oomKillsAtExit: await watchedCgroups?.oomKills(),
				})
			}),
		)
	}

	/** The runtime's `start`, then the agent's socket (gVisor), its `healthz`, the network's ready. */
	async #startAgent(
		created: CreatedContainer,
		pid: number,
		transport: AgentTransport,
		socketDir: string | undefined,
		network: ContainerNetwork,
	): Promise<void> {
		const { backend } = this.#context
		const { id, name, dirs } = this.#claims
		await runRuntimeCommand(
			backend.runtime,
			'start',
			startArgv(this.#invocation, name),
			this.#signal,
		)
		if (socketDir !== undefined) {
			await adoptAgentSocket(
				join(socketDir, AGENT_SOCKET_NAME),
				dirs.socketPath,
				{ gone: () => created.isGone(), outputTail: () => created.outputTail() },
				{ sandboxId: id, timeoutMs: backend.readyTimeoutMs, ...this.#signalOption },
			)
		}
		await waitForAgentReady({
			sandboxId: id,
			agent: asLaunched(created, pid),
			ready: agentReadyCheck(transport, socketDir, dirs.socketPath),
			timeoutMs: backend.readyTimeoutMs,
			...this.#signalOption,
		})
		if (this.#spec.egress !== 'deny-all') await network.ready(pid)
	}
}

function invocationOf(
	backend: ContainerInstanceContext['backend'],
	stateRoot: string,
): RuntimeInvocation {
	return {
		runtime: backend.runtime,
		path: backend.runtimePath,
		stateDir: join(stateRoot, 'runtime'),
		runscPlatform: backend.runscPlatform,
	}
}
