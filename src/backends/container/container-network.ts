/**
 * A container sandbox's network, per egress kind, through the machine layer the local tier uses
 * too (`backends/machine/network/`): the same egress proxy and capture route for `static` /
 * `resolver`, the same slirp4netns attach and host-address guard for `allow-all`. Only the way in
 * differs: bubblewrap reports its sandbox's pid on a descriptor; a container's init is known from
 * the runtime's pid file once `create` returns, and the namespace is set up there — before
 * `start`, so nothing of the workload ever runs on an unguarded or uncaptured network.
 *
 * - `deny-all`: the runtime's fresh namespace with only `lo`; nothing here.
 * - `allow-all`: slirp4netns on the namespace (its `--exit-fd` a pipe only this host process
 *   holds: it exits with the host), moved into the sandbox's cgroups, the guard ruleset inside;
 *   a resolv.conf naming slirp's forwarder bound over the image's.
 * - `static` / `resolver`: the proxy on `<stateRoot>/egress/`, bound read-only at
 *   `/run/namzu-egress`; the `local default` route in the namespace; a resolv.conf naming the
 *   capture helper's stub; with credentials the CA reaches the workload as `NODE_EXTRA_CA_CERTS`
 *   and as its system bundle (the image's bundle plus the CA, bound over the image's file), or,
 *   when the image has no bundle, as `SSL_CERT_FILE` naming the CA itself.
 */
import { chmod, mkdir, realpath, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EGRESS_BRIDGE_DIR, EGRESS_CA_CERT_NAME } from '../../wire/egress-bridge.js'
import {
	ALLOW_ALL_RESOLV_CONF,
	ALLOW_ALL_RESOLV_CONF_NAME,
	type NetworkToolPaths,
	PROXIED_RESOLV_CONF,
	readHostAddresses,
} from '../machine/network/egress-network.js'
import { LocalNetworkSetupError } from '../machine/network/network-errors.js'
import { setCaptureRoute, waitForCaptureHelper } from '../machine/network/proxied-network.js'
import {
	EGRESS_BRIDGE_DIR_NAME,
	EGRESS_TRUST_BUNDLE_NAME,
	type EgressTestSeam,
	type SandboxEgressProxy,
	SYSTEM_TRUST_BUNDLE,
	startSandboxEgressProxy,
} from '../machine/network/sandbox-egress-proxy.js'
import {
	bounded,
	type SlirpNetwork,
	startSlirpNetwork,
	waitForLoopback,
} from '../machine/network/slirp-network.js'
import type { MachineEgress } from '../machine/spec/machine-sandbox-spec.js'
import type { ContainerSandboxSpec } from './container-sandbox-spec.js'
import type { OciBind } from './oci-config.js'

/** Where the image's resolver configuration is (a regular file of the image, or nothing is bound). */
export const IMAGE_RESOLV_CONF = '/etc/resolv.conf'

/** What the image has at the paths a network binds over (regular files only). */
export interface ImageNetworkFiles {
	readonly resolvConf: boolean
	/** The image's system trust bundle (`SYSTEM_TRUST_BUNDLE` inside it). */
	readonly trustBundle: boolean
}

export interface ContainerNetworkPlanInput {
	readonly egress: MachineEgress
	readonly stateRoot: string
	readonly credentials: boolean
	readonly image: ImageNetworkFiles
}

export interface ContainerNetworkPlan {
	/** Host files the host writes (name inside the state root → content); the trust bundle aside. */
	readonly files: Readonly<Record<string, string>>
	readonly binds: readonly OciBind[]
	/** Besides what the proxy itself hands the workload (`NODE_EXTRA_CA_CERTS`). */
	readonly workloadEnv: Readonly<Record<string, string>>
}

/**
 * The binds and files of a container's network (pure). A bind's target is a file of the image
 * (the root is read-only and shared: a missing mount point would be created in the image), so a
 * file the image lacks is not bound over: without `/etc/resolv.conf` the C library asks
 * 127.0.0.1, which is the capture helper's stub.
 */
export function planContainerNetwork(input: ContainerNetworkPlanInput): ContainerNetworkPlan {
	if (input.egress === 'deny-all') return { files: {}, binds: [], workloadEnv: {} }
	const resolv = input.egress === 'allow-all' ? ALLOW_ALL_RESOLV_CONF : PROXIED_RESOLV_CONF
	const binds: OciBind[] = []
	if (input.image.resolvConf) {
		binds.push({
			source: join(input.stateRoot, ALLOW_ALL_RESOLV_CONF_NAME),
			target: IMAGE_RESOLV_CONF,
			readOnly: true,
		})
	}
	const files = { [ALLOW_ALL_RESOLV_CONF_NAME]: resolv }
	if (input.egress === 'allow-all') return { files, binds, workloadEnv: {} }
	binds.push({
		source: join(input.stateRoot, EGRESS_BRIDGE_DIR_NAME),
		target: EGRESS_BRIDGE_DIR,
		readOnly: true,
	})
	const workloadEnv: Record<string, string> = {}
	if (input.credentials && input.image.trustBundle) {
		binds.push({
			source: join(input.stateRoot, EGRESS_TRUST_BUNDLE_NAME),
			target: SYSTEM_TRUST_BUNDLE,
			readOnly: true,
		})
	} else if (input.credentials) {
		// OpenSSL's own variable: the CA alone is the whole trust store of an image that has none.
		workloadEnv.SSL_CERT_FILE = `${EGRESS_BRIDGE_DIR}/${EGRESS_CA_CERT_NAME}`
	}
	return { files, binds, workloadEnv }
}

/** Whether `path` inside `rootfs` is a regular file reached through no symbolic link. */
export async function regularFileOfImage(rootfs: string, path: string): Promise<boolean> {
	const full = join(rootfs, path)
	try {
		const [real, root] = await Promise.all([realpath(full), realpath(rootfs)])
		return real === join(root, path) && (await stat(real)).isFile()
	} catch {
		return false
	}
}

export interface ContainerNetworkInput {
	readonly sandboxId: string
	readonly stateRoot: string
	readonly spec: ContainerSandboxSpec
	readonly rootfs: string
	readonly tools: NetworkToolPaths
	readonly timeoutMs: number
	readonly signal?: AbortSignal
	readonly seam?: EgressTestSeam
}

export interface ContainerNetwork {
	readonly binds: readonly OciBind[]
	/** `NAMZU_AGENT_EGRESS_*` for the agent (its capture helper), when proxied. */
	readonly agentSettings: Readonly<Record<string, string>>
	readonly workloadEnv: Readonly<Record<string, string>>
	/** Values that must never be echoed in a failure (the credentials' header values). */
	readonly secrets: readonly string[]
	/**
	 * Between the runtime's `create` and `start`: the namespace of `sandboxPid` is given its
	 * network; `join` moves a helper process (slirp4netns) into the sandbox's cgroups.
	 */
	attach(sandboxPid: number, join?: (pid: number) => Promise<void>): Promise<void>
	/** After `start`: resolves once what serves the network inside (the capture helper) is up. */
	ready(sandboxPid: number): Promise<void>
	/** Stops what runs on the host for it (slirp4netns, the proxy). Idempotent. */
	stop(): Promise<void>
	/** The egress proxy's decisions (a proxied network only), for the sandbox's `events()`. */
	readonly egressDecisions?: SandboxEgressProxy['onDecision']
}

const NO_NETWORK: ContainerNetwork = {
	binds: [],
	agentSettings: {},
	workloadEnv: {},
	secrets: [],
	attach: async () => undefined,
	ready: async () => undefined,
	stop: async () => undefined,
}

/** The namespace's loopback is up (the runtime brings it up before `create` returns; checked). */
function loopbackUp(input: ContainerNetworkInput, sandboxPid: number): Promise<void> {
	return bounded(
		waitForLoopback(sandboxPid).catch((error: unknown) => {
			const detail = 'the container exited before its loopback was up'
			throw new LocalNetworkSetupError(input.sandboxId, 'namespace', detail, '', { cause: error })
		}),
		input.timeoutMs,
		input.signal,
		() => new LocalNetworkSetupError(input.sandboxId, 'namespace', 'loopback never came up', ''),
	)
}

/**
 * Writes the files, starts the proxy (proxied kinds) and returns the binds and environment the
 * container is built with, and the two steps around `start`. The caller has checked the tools
 * (`assertNetworkUsable`) before it claimed anything.
 */
export async function prepareContainerNetwork(
	input: ContainerNetworkInput,
): Promise<ContainerNetwork> {
	const { spec } = input
	if (spec.egress === 'deny-all') return NO_NETWORK
	const credentials = (spec.proxiedEgress?.credentials.length ?? 0) > 0
	const image: ImageNetworkFiles = {
		resolvConf: await regularFileOfImage(input.rootfs, IMAGE_RESOLV_CONF),
		trustBundle: credentials && (await regularFileOfImage(input.rootfs, SYSTEM_TRUST_BUNDLE)),
	}
	const plan = planContainerNetwork({
		egress: spec.egress,
		stateRoot: input.stateRoot,
		credentials,
		image,
	})
	for (const [name, content] of Object.entries(plan.files)) {
		const path = join(input.stateRoot, name)
		await writeFile(path, content)
		// Readable by the sandbox uid whatever the umask.
		await chmod(path, 0o644)
	}
	const timing = { timeoutMs: input.timeoutMs, ...(input.signal ? { signal: input.signal } : {}) }
	const target = (sandboxPid: number) => ({ sandboxId: input.sandboxId, sandboxPid, ...timing })
	if (spec.egress === 'allow-all') {
		let slirp: SlirpNetwork | undefined
		return {
			binds: plan.binds,
			agentSettings: {},
			workloadEnv: {},
			secrets: [],
			attach: async (sandboxPid, join) => {
				await loopbackUp(input, sandboxPid)
				slirp = await startSlirpNetwork({
					...target(sandboxPid),
					tools: input.tools,
					lifetime: 'host',
					// The guard refuses what the host has at create time.
					hostAddresses: readHostAddresses(),
					...(join ? { join } : {}),
				})
			},
			ready: async () => undefined,
			stop: async () => slirp?.stop(),
		}
	}
	const proxiedEgress = spec.proxiedEgress
	if (proxiedEgress === undefined) throw new Error('unreachable: a proxied spec has its policy')
	const bridge = join(input.stateRoot, EGRESS_BRIDGE_DIR_NAME)
	await mkdir(bridge, { mode: 0o755 })
	await chmod(bridge, 0o755)
	const proxy: SandboxEgressProxy = await startSandboxEgressProxy({
		sandboxId: input.sandboxId,
		stateRoot: input.stateRoot,
		egress: proxiedEgress,
		hostAddresses: readHostAddresses(),
		...(image.trustBundle ? { systemTrustBundle: join(input.rootfs, SYSTEM_TRUST_BUNDLE) } : {}),
		...timing,
		...(input.seam ? { seam: input.seam } : {}),
	})
	let closing: Promise<void> | undefined
	return {
		binds: plan.binds,
		agentSettings: proxy.agentSettings,
		workloadEnv: { ...proxy.workloadEnv, ...plan.workloadEnv },
		secrets: proxiedEgress.credentials.flatMap((entry) => Object.values(entry.headers)),
		attach: async (sandboxPid) => {
			await loopbackUp(input, sandboxPid)
			await setCaptureRoute({ ...target(sandboxPid), tools: input.tools })
		},
		ready: (sandboxPid) => waitForCaptureHelper({ ...target(sandboxPid), ports: proxy.ports }),
		egressDecisions: proxy.onDecision,
		stop: () => {
			closing ??= proxy.close()
			return closing
		},
	}
}
