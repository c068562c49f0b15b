/**
 * One QEMU guest: a private directory (console log, the agent's environment file, mode 0700), a
 * free loopback port forwarded to the guest's agent, QEMU under `setpriv --pdeathsig KILL` (the
 * VMM dies with the host process even after a SIGKILL of the host), and a transport with this
 * boot's token, ready once the agent answers `healthz`; under `static` / `resolver` egress the
 * sandbox's egress proxy on a socket in that directory (`guest-egress.ts`). `destroy()` kills the
 * VMM, closes the proxy and removes the directory (a sized workspace's disk image with it); the root disk's overlay is QEMU's own
 * temporary file, gone with it.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import { AgentTransport } from '../../host/transport/agent-transport.js'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import { createSandboxCgroups, type SandboxCgroups } from '../machine/cgroups/cgroup-limits.js'
import { agentSettingsFrom } from '../machine/launch/agent-environment.js'
import { type LaunchedAgentProcess, launchAgentProcess } from '../machine/launch/agent-launcher.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import type { EgressTestSeam } from '../machine/network/sandbox-egress-proxy.js'
import type { ProxiedEgress } from '../machine/spec/machine-sandbox-spec.js'
import { type GuestEgress, startGuestEgress, waitForGuestCaptureHelper } from './guest-egress.js'
import { GUEST_WORKSPACE_DEVICE, prepareGuestWorkspaceDisk } from './guest-workspace-disk.js'
import type { MicroVMImage } from './microvm-image.js'
import { GUEST_AGENT_PORT, guestEnvFile, qemuArgv } from './qemu-argv.js'

/** Where the guest's workspace is, as the agent sees it. */
export const MICROVM_WORKSPACE = '/workspace'
/**
 * What the VMM may hold beyond the guest's RAM (device model, TCG's translation cache bounded by
 * `tb-size`, slirp): the host cgroup's memory limit is the guest's RAM plus this.
 */
export const VMM_MEMORY_OVERHEAD_MB = 384
/** Pause between readiness probes while the guest boots. */
const READY_PROBE_INTERVAL_MS = 250

export interface QemuGuestOptions {
	readonly sandboxId: string
	readonly qemuBinary: string
	readonly image: MicroVMImage
	readonly accel: 'kvm' | 'tcg'
	readonly memoryMb: number
	readonly vcpus: number
	readonly callerEnv: Readonly<Record<string, string>>
	/** `diskLimitMb`: the workspace on a disk of its own of this size. */
	readonly workspaceDiskMb?: number
	/** `static` / `resolver` egress: the sandbox's proxy, reached through the NIC's `guestfwd`. */
	readonly egress?: ProxiedEgress
	/** @internal Tests' stand-in for the host's resolution and trust store. */
	readonly egressSeam?: EgressTestSeam
	readonly bootTimeoutMs: number
	readonly signal?: AbortSignal
}

export interface QemuGuest {
	readonly transport: AgentTransport
	readonly vmm: LaunchedAgentProcess
	readonly dir: string
	/** The egress proxy's decisions (a proxied egress only), for the sandbox's `events()`. */
	readonly egressDecisions?: GuestEgress['onDecision']
	/** The guest's serial console so far (kernel and init messages), for failure reports. */
	consoleTail(): Promise<string>
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
		readonly workspaceDisk: string | undefined
		readonly egress: GuestEgress | undefined
	},
): LaunchedAgentProcess {
	const argv = qemuArgv(options.qemuBinary, {
		image: options.image,
		accel: options.accel,
		memoryMb: options.memoryMb,
		vcpus: options.vcpus,
		hostPort: boot.hostPort,
		agentBundle: agentBundlePath(),
		envFile: boot.envFile,
		consoleLog: boot.consoleLog,
		...(boot.workspaceDisk === undefined ? {} : { workspaceDisk: boot.workspaceDisk }),
		...(boot.egress === undefined ? {} : { egress: boot.egress }),
	})
	return launchAgentProcess({
		argv: withCgroupJoin(boot.procsFiles, ['setpriv', '--pdeathsig', 'KILL', '--', ...argv]),
		env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
		cwd: boot.dir,
		secrets: [boot.token, ...Object.values(options.callerEnv)],
	})
}

/**
 * The VMM in a host cgroup of its own: its memory bounded (guest RAM plus the VMM's own), its CPU
 * to the guest's vCPUs. Where the host cannot enforce that, the guest's RAM and vCPUs still bound
 * the workload, so the cgroup is best effort.
 */
function createVmmCgroups(options: QemuGuestOptions) {
	return createSandboxCgroups(options.sandboxId, {
		memoryLimitMb: options.memoryMb + VMM_MEMORY_OVERHEAD_MB,
		cpuLimit: options.vcpus,
		defaultsOnly: ['memory', 'cpu'],
		defaultLimits: 'best-effort',
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

export async function bootQemuGuest(options: QemuGuestOptions): Promise<QemuGuest> {
	options.signal?.throwIfAborted()
	const dir = await mkdtemp(join(tmpdir(), `namzu-${options.sandboxId}-`))
	const token = randomBytes(32).toString('hex')
	const consoleLog = join(dir, 'console.log')
	const envFile = join(dir, 'agent.env')
	let vmm: LaunchedAgentProcess | undefined
	let cgroups: SandboxCgroups | undefined
	let egress: GuestEgress | undefined
	// The VMM first (its connectors feed the proxy), then the proxy, the groups and the directory.
	const teardown = async () => {
		await vmm?.kill()
		await egress?.close()
		await cgroups?.remove()
		await rm(dir, { recursive: true, force: true })
	}
	try {
		cgroups = await createVmmCgroups(options)
		const workspaceDisk =
			options.workspaceDiskMb === undefined
				? undefined
				: await prepareGuestWorkspaceDisk(dir, options.workspaceDiskMb, options.signal)
		egress = await startEgress(options, dir)
		await writeAgentEnvironment(
			envFile,
			options.callerEnv,
			token,
			workspaceDisk !== undefined,
			egress,
		)
		const hostPort = await freeLoopbackPort()
		vmm = launchVmm(options, {
			dir,
			token,
			envFile,
			consoleLog,
			hostPort,
			procsFiles: cgroups?.procsFiles ?? [],
			workspaceDisk,
			egress,
		})
		const launched = vmm
		const transport = new AgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port: hostPort, token },
			{ permanentDialFailure: () => launched.exitStatus() !== undefined },
		)
		let destroying = false
		// The VMM's end is the guest's death (GuestDiedError for every call), unless we ended it.
		transport.liveness.watch(
			launched.exited.then((exit) =>
				destroying ? undefined : { exitCode: exit.code, signal: exit.signal },
			),
		)
		await waitForGuest(options, launched, transport, egress)
		let destroyed: Promise<void> | undefined
		return {
			transport,
			vmm: launched,
			dir,
			...(egress ? { egressDecisions: egress.onDecision } : {}),
			consoleTail: () => readConsoleTail(consoleLog),
			destroy: () => {
				destroying = true
				destroyed ??= teardown()
				return destroyed
			},
		}
	} catch (error) {
		await teardown()
		throw error
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
