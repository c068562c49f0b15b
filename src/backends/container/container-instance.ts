/**
 * One running container sandbox below the Sandbox object. The machine-level pieces are the local
 * tier's (the sandbox uid and its locks, the state directory, the host-claims record, the cgroup
 * tree and its `work/` groups, the sized workspace, the agent's unreadable node copy, the
 * listening socket handed over as descriptor 3); what is container-specific is the bundle
 * (`oci-config.ts`) and the runtime commands (`runtime-argv.ts`). `release()` takes all of it down;
 * a failed or aborted start leaves nothing, and a crashed host leaves a record the local reaper
 * undoes (the container's init as the launcher, its cgroups, its runtime state inside the root).
 */
import { chmod, chown, copyFile, lstat, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { totalmem } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	probeSandboxPrivileges,
} from '../../exec-programs/privilege-probe.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
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
import { workloadCgroupFds } from '../machine/cgroups/workload-cgroups.js'
import { emptyClaims } from '../machine/claims/host-claims.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import {
	HostClaimsLedger,
	releaseHostClaims,
	removeStateRoot,
} from '../machine/claims/release-host-claims.js'
import { newSandboxId } from '../machine/claims/sandbox-id.js'
import {
	allocateSandboxIdentity,
	releaseSandboxIdentity,
} from '../machine/claims/sandbox-identity.js'
import { agentSettingsFrom, buildAgentEnvironment } from '../machine/launch/agent-environment.js'
import type { LaunchedAgentProcess } from '../machine/launch/agent-launcher.js'
import {
	createInheritableListenSocket,
	type InheritableListenSocket,
} from '../machine/launch/agent-listen-socket.js'
import { materializeAgentRuntime, planAgentRuntime } from '../machine/launch/runtime-cache.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../machine/launch/transport-options.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import { LocalSandboxCleanupError, LocalSandboxStartError } from '../machine/machine-errors.js'
import { assertNetworkUsable } from '../machine/network/egress-network.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import { sandboxSeccompFilter } from '../machine/seccomp/seccomp-filter.js'
import { cgroupRequestFor, resolveSandboxLimits } from '../machine/spec/sandbox-limits.js'
import {
	createSandboxDirectories,
	resolveStateBase,
	type SandboxDirectories,
	STATE_DIR_PREFIX,
	sandboxRootFor,
} from '../machine/workspace/sandbox-directories.js'
import {
	assertDiskLimitEnforceable,
	recordAndMountWorkspaceDisk,
} from '../machine/workspace/workspace-disk.js'
import type { ResolvedContainerBackendConfig } from './container-backend-config.js'
import { ContainerRuntimeUnavailableError } from './container-errors.js'
import type { ContainerImage } from './container-image.js'
import type { ResolvedContainerSandboxLayout } from './container-layout.js'
import { prepareLayout, under } from './container-layout-mounts.js'
import { type ContainerNetwork, prepareContainerNetwork } from './container-network.js'
import { type CreatedContainer, createContainer, runRuntimeCommand } from './container-process.js'
import type { ContainerSandboxSpec } from './container-sandbox-spec.js'
import {
	buildOciConfig,
	CONTAINER_AGENT_BUNDLE,
	CONTAINER_AGENT_NODE,
	CONTAINER_HOME_DIR,
	CONTAINER_INIT,
	CONTAINER_SOCKET_PATH,
	CONTAINER_WORKSPACE,
	containerMounts,
} from './oci-config.js'
import { createArgv, deleteArgv, type RuntimeInvocation, startArgv } from './runtime-argv.js'
import { runtimeCgroupDirs } from './runtime-cgroup-dirs.js'

export const CONTAINER_HOSTNAME = 'namzu-sandbox'
const DELETE_BUDGET_MS = 10_000

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
	readonly egressDecisions?: ContainerNetwork['egressDecisions']
	/** The runtime's container id (`runc list --root <stateRoot>/runtime`). */
	readonly containerId: string
	/** The host state root (`<stateDir>/namzu-sbx-<id>`). */
	readonly stateRoot: string
	/** Host pid of the container's first process. */
	readonly pid: number | undefined
	hasExited(): boolean
	/** Kills every process, deletes the container, removes the cgroups and the state root. Idempotent. */
	release(): Promise<void>
}

function invocationOf(
	backend: ResolvedContainerBackendConfig,
	stateRoot: string,
): RuntimeInvocation {
	return {
		runtime: backend.runtime,
		path: backend.runtimePath,
		stateDir: join(stateRoot, 'runtime'),
		runscPlatform: backend.runscPlatform,
	}
}

export async function startContainerInstance(
	context: ContainerInstanceContext,
	spec: ContainerSandboxSpec,
	signal?: AbortSignal,
): Promise<ContainerInstance> {
	signal?.throwIfAborted()
	const { backend } = context
	if (process.getuid?.() !== 0) {
		throw new ContainerRuntimeUnavailableError(
			backend.runtime,
			backend.runtimePath,
			'the container tier runs its runtime as root (it hands every sandbox its own host uid)',
			'run the host process as root, or use the local tier',
		)
	}
	const image = await context.image()
	// A missing network tool is named before anything is claimed.
	await assertNetworkUsable(spec.egress, backend.tools)
	if (spec.diskLimitMb !== undefined) {
		await assertDiskLimitEnforceable({
			diskLimitMb: spec.diskLimitMb,
			callerOwnsWorkspace: false,
			mkfsPath: backend.tools.mkfsExt4,
			asRoot: true,
		})
	}
	const limits = resolveSandboxLimits(spec, { totalMemoryBytes: totalmem() })
	signal?.throwIfAborted()
	const id = newSandboxId()
	const name = `${STATE_DIR_PREFIX}${id}`
	const base = await resolveStateBase(backend.stateDir)
	const stateRoot = sandboxRootFor(base, id)
	const identity = await allocateSandboxIdentity(base, backend.sandboxUidRange, { id, stateRoot })
	if (identity.mode !== 'per-sandbox-uid') throw new Error('unreachable: root hands out uids')
	const owner = { uid: identity.uid, gid: identity.gid }
	let dirs: SandboxDirectories
	try {
		dirs = await createSandboxDirectories(base, id, undefined, owner)
	} catch (error) {
		await releaseSandboxIdentity(identity, id)
		throw error
	}
	const ledger = new HostClaimsLedger({
		...emptyClaims(id, dirs.root, await readProcessIdentity(process.pid)),
		identity: { uid: identity.uid, gid: identity.gid, lockPath: identity.lockPath },
	})
	const invocation = invocationOf(backend, dirs.root)
	let cgroups: SandboxCgroups | undefined
	let runtimeGroups: SandboxCgroups | undefined
	let listener: InheritableListenSocket | undefined
	let container: CreatedContainer | undefined
	let network: ContainerNetwork | undefined
	let hostFds: number[] = []
	let releasing: Promise<void> | undefined
	const release = () => {
		releasing ??= (async () => {
			await listener?.discard()
			const failures: unknown[] = []
			// All at once: a frozen per-command group holds its processes until the cgroup side thaws
			// it, and the runtime's delete waits for the container's init.
			await Promise.all([
				container === undefined
					? undefined
					: runRuntimeCommand(
							backend.runtime,
							'delete',
							deleteArgv(invocation, name),
							AbortSignal.timeout(DELETE_BUDGET_MS),
						).catch((error: unknown) => failures.push(error)),
				cgroups?.remove().catch((error: unknown) => failures.push(error)),
			])
			await runtimeGroups?.remove().catch((error: unknown) => failures.push(error))
			// After the container is gone: nothing inside is left to use the network.
			await network?.stop().catch((error: unknown) => failures.push(error))
			await releaseHostClaims(ledger.current)
				.then(() => removeStateRoot(dirs.root))
				.catch((error: unknown) => failures.push(error))
			const failed = LocalSandboxCleanupError.ofFailures(failures)
			if (failed) throw failed
		})()
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
		const layout = await prepareLayout(context.layout, image, dirs, ledger, {
			id,
			base,
			identity: owner,
			range: backend.sandboxUidRange,
			...(signal ? { signal } : {}),
		})
		signal?.throwIfAborted()
		// gVisor has its own kernel: it takes neither a listener nor host cgroup descriptors, so its
		// agent binds a socket in a directory of its own (reaching the host through
		// --host-uds=create), the sandbox's groups bound the whole sandbox from outside, and its
		// loader must read the binaries it runs (its ptrace is restricted to descendants instead).
		const hostUds = backend.runtime === 'runsc'
		// The agent's node is the image's, copied unreadable (the kernel then marks the agent
		// non-dumpable: the workload, of the same uid, cannot ptrace it or read its descriptors).
		const runtimePlan = await planAgentRuntime(base, {
			nodePath: image.node.onHost,
			agentPath: context.agentPath,
			readableNode: hostUds,
		})
		const { agentNode, agentBundle, workloadNode } = runtimePlan.files
		await ledger.record({
			runtimeFiles: [agentNode, agentBundle, ...(workloadNode === undefined ? [] : [workloadNode])],
		})
		const runtime = await materializeAgentRuntime(runtimePlan)
		const nodeCopy = hostUds ? runtime.workloadNode : runtime.agentNode
		if (nodeCopy === undefined) throw new Error('unreachable: the readable node copy was asked for')
		// The init likewise: it holds the listener too, so it must not be dumpable either.
		let initCopy: string | undefined
		if (image.init) {
			initCopy = join(dirs.root, 'init')
			await copyFile(image.init.onHost, initCopy)
			await chmod(initCopy, hostUds ? 0o555 : 0o111)
		}
		const request = cgroupRequestFor(limits, {
			defaultLimits: backend.defaultLimits,
			workloadOwner: owner,
			recordDirs: (groupDirs) => ledger.record({ cgroupDirs: groupDirs }),
		})
		cgroups = await createSandboxCgroups(name, request)
		signal?.throwIfAborted()
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
		runtimeGroups = adoptSandboxCgroups(outside)
		const oomKillsAtStart = await cgroups?.oomKills()
		const workloadGroups = hostUds ? [] : (cgroups?.workloadGroups ?? [])
		hostFds = openWorkloadGroupFds(workloadGroups)
		const socketDir = hostUds ? join(dirs.root, 'uds') : undefined
		if (socketDir !== undefined) {
			await mkdir(socketDir, { mode: 0o700 })
			await chown(socketDir, owner.uid, owner.gid)
		}
		network = await prepareContainerNetwork({
			sandboxId: id,
			stateRoot: dirs.root,
			spec,
			rootfs: image.rootfs,
			tools: backend.tools,
			timeoutMs: backend.readyTimeoutMs,
			...(signal ? { signal } : {}),
			...(context.egressSeam ? { seam: context.egressSeam } : {}),
		})
		const sandboxNetwork = network
		const agentEnv = {
			...buildAgentEnvironment({
				workspace: CONTAINER_WORKSPACE,
				homeDir: CONTAINER_HOME_DIR,
				nodePath: image.node.inImage,
				user: 'sandbox',
				callerEnv: { ...network.workloadEnv, ...spec.env },
				agentSettings: {
					...agentSettingsFrom(context.hostEnv ?? process.env),
					...network.agentSettings,
				},
				workloadCgroups: workloadCgroupFds(workloadGroups),
			}),
			...(layout.readRoots.length === 0
				? {}
				: { NAMZU_SANDBOX_READ_ROOTS: layout.readRoots.join(':') }),
			...(layout.writeRoots.length === 0
				? {}
				: { NAMZU_SANDBOX_WRITE_ROOTS: layout.writeRoots.join(':') }),
		}
		const env = hostUds ? listeningOnPath(agentEnv) : agentEnv
		const agentCommand = [CONTAINER_AGENT_NODE, CONTAINER_AGENT_BUNDLE]
		const config = buildOciConfig({
			rootfs: image.rootfs,
			hostname: CONTAINER_HOSTNAME,
			user: owner,
			args: initCopy === undefined ? agentCommand : [CONTAINER_INIT, '--', ...agentCommand],
			env,
			cwd: CONTAINER_WORKSPACE,
			mounts: containerMounts({
				tmpfs: limits.tmpfs,
				owner,
				runtime: {
					node: nodeCopy,
					bundle: runtime.agentBundle,
					...(initCopy === undefined ? {} : { init: initCopy }),
				},
				...(socketDir === undefined ? {} : { socketDir }),
				workspace: dirs.workspace,
				scaffolds: layout.scaffolds,
				binds: layout.binds,
				networkBinds: network.binds,
			}),
			cgroupsPath: name,
			annotations: { ...backend.labels, 'ai.namzu.sandbox.id': id },
			seccomp: sandboxSeccompFilter({
				allowUserNamespaces: spec.allowUserNamespaces === true,
			}).oci({ kernelRefusesClone3: backend.runtime === 'runsc' }),
		})
		const bundle = join(dirs.root, 'bundle')
		await mkdir(bundle, { mode: 0o700 })
		// It holds the caller's env: readable by root alone.
		await writeFile(join(bundle, 'config.json'), JSON.stringify(config), { mode: 0o600 })
		listener = hostUds ? undefined : await createInheritableListenSocket(dirs.socketPath)
		const pidFile = join(dirs.root, 'container.pid')
		container = await createContainer({
			runtime: backend.runtime,
			argv: withCgroupJoin(
				cgroups?.procsFiles ?? [],
				createArgv(invocation, {
					containerId: name,
					bundle,
					pidFile,
					preserveFds: listener === undefined ? 0 : 1 + hostFds.length,
				}),
			),
			fds: listener === undefined ? [] : [listener.fd, ...hostFds],
			secrets: [...Object.values(spec.env), ...network.secrets],
			...(signal ? { signal } : {}),
		})
		const created = container
		const pid = Number((await readFile(pidFile, 'utf8')).trim())
		const launcher = Number.isSafeInteger(pid) ? await readProcessIdentity(pid) : undefined
		// Named with its start time, so a reaper never signals a process that reused the pid.
		if (launcher) await ledger.record({ launcher })
		closeFds(hostFds)
		hostFds = []
		if (spec.egress !== 'deny-all') {
			if (!Number.isSafeInteger(pid)) {
				throw new LocalSandboxStartError(id, "the runtime's pid file holds no pid", {
					stderrTail: created.outputTail(),
				})
			}
			// Nothing of the workload runs before `start`: its network is in place before anything uses it.
			await network.attach(pid, cgroups?.join)
		}
		await listener?.handOver()
		const transport = new AgentTransport(
			{ kind: 'unix', path: dirs.socketPath },
			{
				connectRetryIntervalMs: backend.readyPollIntervalMs,
				maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
				permanentDialFailure: () => created.isGone(),
			},
		)
		const watchedCgroups = cgroups
		transport.liveness.watch(
			created.gone.then(async () => {
				if (releasing !== undefined) return undefined
				return guestExitOf({
					sandboxId: id,
					exit: { code: null, signal: null },
					confined: true,
					oomKillsAtStart,
					oomKillsAtExit: await watchedCgroups?.oomKills(),
				})
			}),
		)
		await runRuntimeCommand(backend.runtime, 'start', startArgv(invocation, name), signal)
		if (socketDir !== undefined) {
			await adoptAgentSocket(join(socketDir, 'agent.sock'), dirs.socketPath, created, {
				sandboxId: id,
				timeoutMs: backend.readyTimeoutMs,
				...(signal ? { signal } : {}),
			})
		}
		await waitForAgentReady({
			sandboxId: id,
			agent: asLaunched(created, pid),
			ready: (readySignal) => transport.healthz(readySignal),
			timeoutMs: backend.readyTimeoutMs,
			...(signal ? { signal } : {}),
		})
		if (spec.egress !== 'deny-all') await sandboxNetwork.ready(pid)
		const instance: ContainerInstance = {
			id,
			rootDir: CONTAINER_WORKSPACE,
			transport,
			...(sandboxNetwork.egressDecisions
				? { egressDecisions: sandboxNetwork.egressDecisions }
				: {}),
			containerId: name,
			stateRoot: dirs.root,
			pid: Number.isSafeInteger(pid) ? pid : undefined,
			hasExited: () => created.isGone(),
			release,
		}
		// gVisor's /proc/<pid>/status carries no capability or no_new_privs lines, so there is
		// nothing for the probe to read; there the OCI config (no capability, no new privileges) and
		// the sentry's own confinement are what hold.
		if (!hostUds) await probeInstance(instance, backend.readyTimeoutMs, signal)
		return instance
	} catch (error) {
		closeFds(hostFds)
		await release().catch(() => undefined)
		if (signal?.aborted) throw signal.reason
		throw error
	}
}

/** The agent's own environment, listening on `CONTAINER_SOCKET_PATH` and inheriting nothing. */
function listeningOnPath(env: Readonly<Record<string, string>>): Record<string, string> {
	const { NAMZU_AGENT_VSOCK_PORT: _port, ...rest } = env
	return { ...rest, NAMZU_AGENT_UNIX_PATH: CONTAINER_SOCKET_PATH, NAMZU_AGENT_INHERITED_FDS: '' }
}

const SOCKET_POLL_MS = 10

/**
 * Waits for the agent's socket to appear in its directory, then moves it into the host-only
 * control directory before anything of the workload can run: the host never dials a path the
 * sandbox can write (a symlink planted there would point the host at any socket of its own).
 */
async function adoptAgentSocket(
	from: string,
	to: string,
	created: CreatedContainer,
	options: {
		readonly sandboxId: string
		readonly timeoutMs: number
		readonly signal?: AbortSignal
	},
): Promise<void> {
	const deadline = Date.now() + options.timeoutMs
	for (;;) {
		options.signal?.throwIfAborted()
		const info = await lstat(from).catch(() => undefined)
		if (info?.isSocket()) break
		if (info !== undefined || created.isGone() || Date.now() > deadline) {
			throw new LocalSandboxStartError(
				options.sandboxId,
				info !== undefined
					? `${from} is not a socket`
					: created.isGone()
						? 'the container exited before its agent bound its socket'
						: `the agent bound no socket within ${options.timeoutMs} ms`,
				{ stderrTail: created.outputTail() },
			)
		}
		await sleep(SOCKET_POLL_MS)
	}
	await rename(from, to)
}

/** What the ready wait reads of a launched agent, for a container (no runtime process is kept). */
function asLaunched(created: CreatedContainer, pid: number): LaunchedAgentProcess {
	const exited = created.gone.then(() => ({ code: null, signal: null }))
	return {
		pid,
		exited,
		pipes: new Map(),
		exitStatus: () => (created.isGone() ? { code: null, signal: null } : undefined),
		stderrTail: () => created.outputTail(),
		kill: async () => undefined,
	}
}

/** The privilege probe through a throwaway Sandbox over the instance's transport. */
async function probeInstance(
	instance: ContainerInstance,
	readyTimeoutMs: number,
	signal: AbortSignal | undefined,
): Promise<void> {
	const probe = createAgentSandbox({
		id: instance.id,
		transport: instance.transport,
		rootDir: instance.rootDir,
		environment: 'linux-namespace',
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
