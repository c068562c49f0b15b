/**
 * One QEMU guest: a private directory (console log, the agent's environment file, its disks, mode
 * 0700) that is a state root of the machine layer, recorded for its reaper (`qemu-host-claims.ts`), a
 * free loopback port forwarded to the guest's agent, QEMU under `setpriv --pdeathsig KILL` (the
 * VMM dies with the host process even after a SIGKILL of the host), and a transport with this
 * boot's token, ready once the agent answers `healthz`; under `static` / `resolver` egress the
 * sandbox's egress proxy on a socket in that directory (`guest-egress.ts`); under `allow-all` the
 * VMM in a network namespace of its own behind the machine layer's slirp4netns and guard, reached
 * through a relay on the same kind of loopback port (`guest-open-network.ts`), for every QEMU a
 * guest runs (a restored one too). `destroy()` kills the VMM, closes the proxy and removes the
 * directory (the root overlay and a sized workspace's disk image with it).
 */

import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { reidentifyRestoredAgent } from '../../host/lifecycle/restored-agent.js'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import type { SandboxCgroups } from '../machine/cgroups/cgroup-limits.js'
import { agentSettingsFrom } from '../machine/launch/agent-environment.js'
import { type LaunchedAgentProcess, launchAgentProcess } from '../machine/launch/agent-launcher.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import type { ProxiedEgress } from '../machine/spec/machine-sandbox-spec.js'
import { STATE_DIR_PREFIX } from '../machine/workspace/sandbox-directories.js'
import { type GuestEgress, startGuestEgress, waitForGuestCaptureHelper } from './guest-egress.js'
import { type GuestOpenNetwork, prepareGuestOpenNetwork } from './guest-open-network.js'
import { GUEST_WORKSPACE_DEVICE, prepareGuestWorkspaceDisk } from './guest-workspace-disk.js'
import { controlBoundFor } from './kvm-probe.js'
import { MicroVMEntropyNotRenewedError } from './microvm-errors.js'
import type { MicroVMImage } from './microvm-image.js'
import { GUEST_AGENT_PORT, guestEnvFile, qemuArgv } from './qemu-argv.js'
import {
	claimMachineRoot,
	createVmmCgroups,
	recordLauncher,
	stateRootIdOf,
} from './qemu-host-claims.js'
import { monitorOnDemand, type OnDemandMonitor, type QemuMonitor } from './qemu-monitor.js'
import {
	copyDisk,
	createRootOverlay,
	loadVmState,
	type SavedDisks,
	VM_STATE_FILES,
} from './qemu-vm-state.js'

/** Where the guest's workspace is, as the agent sees it. */
export const MICROVM_WORKSPACE = '/workspace'
/** Pause between readiness probes while the guest boots. */
const READY_PROBE_INTERVAL_MS = 250
/** QEMU creates its monitor socket before the guest runs: this is only a dead VMM's bound. */
const MONITOR_CONNECT_MS = 30_000

export interface QemuGuestOptions {
	readonly sandboxId: string
	readonly qemuBinary: string
	readonly image: MicroVMImage
	readonly accel: 'kvm' | 'tcg'
	readonly memoryMb: number
	readonly vcpus: number
	readonly callerEnv: Readonly<Record<string, string>>
	/** The provider's state directory: each QEMU's private directory is a state root in it. */
	readonly stateDir: string
	/** `diskLimitMb`: the workspace on a disk of its own of this size. */
	readonly workspaceDiskMb?: number
	/** `static` / `resolver` egress: the sandbox's proxy, reached through the NIC's `guestfwd`. */
	readonly egress?: ProxiedEgress
	/** `allow-all`: the VMM in a namespace of its own behind slirp4netns and the host-address guard. */
	readonly allowAll?: boolean
	/** @internal Tests' stand-in for the host's resolution and trust store. */
	readonly egressSeam?: EgressTestSeam
	readonly bootTimeoutMs: number
	readonly signal?: AbortSignal
}

/**
 * A sandbox's guest: its transport, and the machine running it now (`vmm`, `dir`, the egress
 * decisions for `events()`, the serial console for failure reports are that machine's).
 */
export interface QemuGuest
	extends Pick<QemuMachine, 'vmm' | 'dir' | 'egressDecisions' | 'consoleTail'> {
	readonly transport: AgentTransport
	/** The QEMU running the guest now. */
	readonly machine: QemuMachine
	/**
	 * Replaces the running QEMU by one loaded from `restore` (a memory rollback): the sandbox's
	 * transport is pointed at the new one once its agent is re-identified, then the old one ends.
	 */
	replace(restore: VmRestoreSource, signal?: AbortSignal): Promise<void>
	destroy(): Promise<void>
}

/** A port on 127.0.0.1 nothing listens on right now (QEMU binds it; a lost race fails the boot). */
export function freeLoopbackPort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer()
		server.once('error', reject)
		server.listen(0, '127.0.0.1', () => {
			const address = server.address()
			const port = typeof address === 'object' && address !== null ? address.port : 0
			server.close(() => resolve(port))
		})
	})
}

/** Retries `healthz` until it answers or `signal` ends the wait (the guest is still booting). */
async function probeUntilHealthy(transport: AgentTransport, signal: AbortSignal): Promise<void> {
	for (;;) {
		signal.throwIfAborted()
		try {
			await transport.healthz(signal)
			return
		} catch (error) {
			if (signal.aborted) throw error
			await sleep(READY_PROBE_INTERVAL_MS, undefined, { signal }).catch(() => undefined)
		}
	}
}

/** The agent's environment for this boot, as the guest's start script sources it (mode 0600). */
function writeAgentEnvironment(
	envFile: string,
	callerEnv: Readonly<Record<string, string>>,
	token: string,
	ownWorkspaceDisk: boolean,
	egress: GuestEgress | undefined,
): Promise<void> {
	return writeFile(
		envFile,
		guestEnvFile({
			...agentSettingsFrom(process.env),
			...egress?.workloadEnv,
			...callerEnv,
			...egress?.agentSettings,
			NAMZU_AGENT_TCP_PORT: String(GUEST_AGENT_PORT),
			NAMZU_AGENT_BIND_TOKEN: token,
			NAMZU_SANDBOX_WORKSPACE: MICROVM_WORKSPACE,
			// The entrypoint mounts it on the workspace (and chowns it to the workload) as root.
			...(ownWorkspaceDisk ? { NAMZU_WORKSPACE_DEVICE: GUEST_WORKSPACE_DEVICE } : {}),
		}),
		{ mode: 0o600 },
	)
}

/** Starts QEMU in its cgroups, dying with this process (`--pdeathsig`). */
function launchVmm(
	options: QemuGuestOptions,
	boot: {
		readonly dir: string
		readonly token: string
		readonly envFile: string
		readonly consoleLog: string
		readonly hostPort: number
		readonly procsFiles: readonly string[]
		readonly disks: SavedDisks
		readonly monitorSocket: string
		readonly incoming: boolean
		readonly egress: GuestEgress | undefined
		readonly open: GuestOpenNetwork | undefined
	},
): LaunchedAgentProcess {
	const { open } = boot
	const argv = qemuArgv(options.qemuBinary, {
		image: options.image,
		accel: options.accel,
		memoryMb: options.memoryMb,
		vcpus: options.vcpus,
		hostPort: open?.vmmPort ?? boot.hostPort,
		agentBundle: agentBundlePath(),
		envFile: boot.envFile,
		consoleLog: boot.consoleLog,
		rootOverlay: boot.disks.rootOverlay,
		monitorSocket: boot.monitorSocket,
		incoming: boot.incoming,
		...(boot.disks.workspaceDisk === undefined ? {} : { workspaceDisk: boot.disks.workspaceDisk }),
		...(boot.egress === undefined ? {} : { egress: boot.egress }),
		...(open === undefined ? {} : { allowAll: { fwCfgFiles: open.fwCfgFiles } }),
	})
	const vmm = open === undefined ? argv : open.wrap(argv)
	return launchAgentProcess({
		argv: withCgroupJoin(boot.procsFiles, ['setpriv', '--pdeathsig', 'KILL', '--', ...vmm]),
		env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
		cwd: boot.dir,
		secrets: [boot.token, ...Object.values(options.callerEnv)],
	})
}

/** Ready once the agent answers and, under a proxied egress, its capture helper listens. */
async function waitForGuest(
	options: QemuGuestOptions,
	launched: LaunchedAgentProcess,
	transport: AgentTransport,
	egress: GuestEgress | undefined,
): Promise<void> {
	const signalOption = options.signal ? { signal: options.signal } : {}
	await waitForAgentReady({
		sandboxId: options.sandboxId,
		agent: launched,
		ready: (signal) => probeUntilHealthy(transport, signal),
		timeoutMs: options.bootTimeoutMs,
		...signalOption,
	})
	if (egress === undefined) return
	await waitForGuestCaptureHelper({
		sandboxId: options.sandboxId,
		transport,
		rootDir: MICROVM_WORKSPACE,
		ports: egress.ports,
		timeoutMs: options.bootTimeoutMs,
		...signalOption,
	})
}

/** The agent's token inside a saved VM state, which the restored agent still checks at first. */
export interface VmRestoreSource {
	readonly memoryFile: string
	readonly rootOverlay: string
	readonly workspaceDisk: string | undefined
	readonly token: string
}

/** One running QEMU process of a guest (a rollback replaces it under the same sandbox). */
export interface QemuMachine {
	readonly vmm: LaunchedAgentProcess
	readonly dir: string
	readonly disks: SavedDisks
	/** Where the agent is reached now, with the token it checks now. */
	readonly handle: TcpAgentHandle
	/** The egress proxy's decisions (a proxied egress only). */
	readonly egressDecisions?: GuestEgress['onDecision']
	/** The VMM's monitor, connected on first use (one connection, reused). */
	monitor(): Promise<QemuMonitor>
	consoleTail(): Promise<string>
	/** Marks the end as ours (not a guest death), kills the VMM and removes everything it had. */
	teardown(): Promise<void>
}

type TcpAgentHandle = {
	readonly kind: 'tcp'
	readonly host: string
	readonly port: number
	readonly token: string
}

/** How one QEMU starts: booted, or loaded from `restore`. */
interface MachineStart {
	readonly options: QemuGuestOptions
	readonly restore?: VmRestoreSource
	/** The state root's id (the sandbox's first QEMU); default a new one. */
	readonly rootId?: string
}

/**
 * Starts one QEMU and waits for its agent: booted, or loaded from a saved state and then
 * re-identified (new token, fresh entropy) before anyone else reaches it.
 */
async function startMachine(start: MachineStart): Promise<QemuMachine> {
	const { options, restore } = start
	options.signal?.throwIfAborted()
	const { id, dir, ledger } = await claimMachineRoot(options, start.rootId)
	const token = randomBytes(32).toString('hex')
	const consoleLog = join(dir, 'console.log')
	const envFile = join(dir, 'agent.env')
	let vmm: LaunchedAgentProcess | undefined
	let cgroups: SandboxCgroups | undefined
	let egress: GuestEgress | undefined
	let open: GuestOpenNetwork | undefined
	const monitor = monitorOnDemand(join(dir, 'qmp.sock'), MONITOR_CONNECT_MS)
	// The VMM first (its relays feed the proxy), then the network, the groups and the directory.
	const teardown = async () => {
		await monitor.close()
		await vmm?.kill()
		await open?.close()
		await egress?.close()
		await cgroups?.remove()
		await rm(dir, { recursive: true, force: true })
	}
	try {
		cgroups = await createVmmCgroups(options, `${STATE_DIR_PREFIX}${id}`)
		await ledger.record({ cgroupDirs: cgroups?.dirs ?? [] })
		const disks = await prepareDisks(options, dir, restore)
		egress = await startEgress(options, dir)
		open = options.allowAll ? await prepareGuestOpenNetwork({ ...options, dir }) : undefined
		// A restored guest read its environment at its first boot: this one only fills fw_cfg.
		await writeAgentEnvironment(
			envFile,
			restore === undefined ? options.callerEnv : {},
			restore === undefined ? token : '',
			disks.workspaceDisk !== undefined,
			egress,
		)
		const hostPort = open?.hostPort ?? (await freeLoopbackPort())
		vmm = launchVmm(options, {
			dir,
			token,
			envFile,
			consoleLog,
			hostPort,
			procsFiles: cgroups?.procsFiles ?? [],
			disks,
			monitorSocket: monitor.path,
			incoming: restore !== undefined,
			egress,
			open,
		})
		const launched = vmm
		await recordLauncher(ledger, launched)
		if (open) await attachOpenNetwork(options, open, launched, cgroups)
		// This start's own channel (the sandbox's transport is pointed here once it is ready).
		const transport = machineTransport(hostPort, restore?.token ?? token, launched, open)
		await bringUp({ options, launched, transport, egress, restore, monitor, token })
		const handle: TcpAgentHandle = { kind: 'tcp', host: '127.0.0.1', port: hostPort, token }
		return {
			vmm: launched,
			dir,
			disks,
			handle,
			...(egress ? { egressDecisions: egress.onDecision } : {}),
			monitor: monitor.get,
			consoleTail: () => readConsoleTail(consoleLog),
			teardown,
		}
	} catch (error) {
		await teardown()
		throw error
	}
}

/** `allow-all`: once the VMM runs, slirp4netns and the guard on its namespace, then the relay. */
function attachOpenNetwork(
	options: QemuGuestOptions,
	open: GuestOpenNetwork,
	vmm: LaunchedAgentProcess,
	cgroups: SandboxCgroups | undefined,
): Promise<void> {
	return open.attach({
		vmm,
		procsFiles: cgroups?.procsFiles ?? [],
		...(cgroups ? { join: cgroups.join } : {}),
		timeoutMs: options.bootTimeoutMs,
		...(options.signal ? { signal: options.signal } : {}),
	})
}

/** A machine's `tcp` handle; no dial is retried once the VMM (or the `allow-all` relay) is gone. */
function machineTransport(
	hostPort: number,
	token: string,
	vmm: LaunchedAgentProcess,
	open: GuestOpenNetwork | undefined,
): AgentTransport {
	return new AgentTransport(
		{ kind: 'tcp', host: '127.0.0.1', port: hostPort, token },
		{
			permanentDialFailure: () => vmm.exitStatus() !== undefined || open?.relayExited() === true,
		},
	)
}

/**
 * Ready: a restore loads its state first; then the agent answers; a restored agent, which still
 * checks the saved token, takes this start's own and fresh entropy (`restored`) before anyone else.
 */
async function bringUp(up: {
	readonly options: QemuGuestOptions
	readonly launched: LaunchedAgentProcess
	readonly transport: AgentTransport
	readonly egress: GuestEgress | undefined
	readonly restore: VmRestoreSource | undefined
	readonly monitor: OnDemandMonitor
	readonly token: string
}): Promise<void> {
	const { options, restore, transport } = up
	if (restore !== undefined) {
		await loadVmState(await up.monitor.get(), restore.memoryFile, options.signal)
	}
	await waitForGuest(options, up.launched, transport, up.egress)
	if (restore === undefined) return
	const renewed = await reidentifyRestoredAgent(transport, {
		token: up.token,
		...(options.signal ? { signal: options.signal } : {}),
	})
	// A restored kernel's generator is the snapshot's: without the reseed, forks share bytes.
	if (!renewed.kernelReseeded) throw new MicroVMEntropyNotRenewedError()
}

/** The root overlay (new, or the saved one's copy) and the sized workspace disk. */
async function prepareDisks(
	options: QemuGuestOptions,
	dir: string,
	restore: VmRestoreSource | undefined,
): Promise<SavedDisks> {
	const rootOverlay = join(dir, VM_STATE_FILES.rootOverlay)
	if (restore === undefined) {
		await createRootOverlay(options.qemuBinary, options.image.rootDisk, rootOverlay, options.signal)
		const workspaceDisk =
			options.workspaceDiskMb === undefined
				? undefined
				: await prepareGuestWorkspaceDisk(dir, options.workspaceDiskMb, options.signal)
		return { rootOverlay, workspaceDisk }
	}
	await copyDisk(restore.rootOverlay, rootOverlay, options.signal)
	if (restore.workspaceDisk === undefined) return { rootOverlay, workspaceDisk: undefined }
	const workspaceDisk = join(dir, VM_STATE_FILES.workspaceDisk)
	await copyDisk(restore.workspaceDisk, workspaceDisk, options.signal)
	return { rootOverlay, workspaceDisk }
}

/** Boots a guest, or restores one from a saved state (`options.restore`: a fork, a warm start). */
export async function bootQemuGuest(
	options: QemuGuestOptions & { readonly restore?: VmRestoreSource },
): Promise<QemuGuest> {
	let destroying = false
	const watch = (machine: QemuMachine, into: AgentTransport) => {
		into.liveness.watch(
			machine.vmm.exited.then((exit) =>
				destroying || current !== machine
					? undefined
					: { exitCode: exit.code, signal: exit.signal },
			),
		)
	}
	const rootId = stateRootIdOf(options.sandboxId)
	let current = await startMachine({
		options,
		...(rootId === undefined ? {} : { rootId }),
		...(options.restore ? { restore: options.restore } : {}),
	})
	const first = current
	const sandboxTransport = new AgentTransport(first.handle, {
		permanentDialFailure: () => current.vmm.exitStatus() !== undefined,
		...controlBoundFor(options.accel),
	})
	watch(first, sandboxTransport)
	let destroyed: Promise<void> | undefined
	return {
		transport: sandboxTransport,
		get machine() {
			return current
		},
		get vmm() {
			return current.vmm
		},
		get dir() {
			return current.dir
		},
		...(first.egressDecisions ? { egressDecisions: first.egressDecisions } : {}),
		consoleTail: () => current.consoleTail(),
		replace: async (restore, signal) => {
			const next = await startMachine({
				options: { ...options, ...(signal ? { signal } : {}) },
				restore,
			})
			const previous = current
			current = next
			sandboxTransport.rebind(next.handle)
			watch(next, sandboxTransport)
			await previous.teardown()
		},
		destroy: () => {
			destroying = true
			destroyed ??= current.teardown()
			return destroyed
		},
	}
}

async function startEgress(
	options: QemuGuestOptions,
	dir: string,
): Promise<GuestEgress | undefined> {
	if (options.egress === undefined) return undefined
	return startGuestEgress({
		sandboxId: options.sandboxId,
		dir,
		egress: options.egress,
		timeoutMs: options.bootTimeoutMs,
		...(options.signal ? { signal: options.signal } : {}),
		...(options.egressSeam ? { seam: options.egressSeam } : {}),
	})
}

async function readConsoleTail(path: string): Promise<string> {
	try {
		return (await readFile(path, 'utf8')).slice(-4096)
	} catch {
		return ''
	}
}
