/**
 * Everything a bubblewrap sandbox needs from the host before its launch, and the undoing of it:
 * the sandbox uid (`sandbox-identity.ts`), the state directory, a caller workspace handed to that
 * uid, the sized workspace (`diskLimitMb`), staging binds for sources the uid cannot reach, the
 * agent's runtime copies, allow-all's resolv.conf, and the root plan with its bwrap command line
 * (behind `setpriv` on a root host). Every claim is written to
 * the host-claims record before it is made; `release()` undoes the record and removes the state
 * root once the sandbox's processes are gone. A failed preparation undoes what it did.
 */
import { chmod, mkdir, open, realpath, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SandboxConfigError } from '../../contract/errors.js'
import { EGRESS_BRIDGE_DIR } from '../../wire/egress-bridge.js'
import {
	emptyClaims,
	type SandboxHostClaims,
	STAGING_DIR_NAME,
} from '../machine/claims/host-claims.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import {
	HostClaimsLedger,
	type HostClaimsUpdate,
	releaseHostClaims,
	removeStateRoot,
} from '../machine/claims/release-host-claims.js'
import {
	allocateSandboxIdentity,
	releaseSandboxIdentity,
	type SandboxIdentity,
	withSandboxIdentity,
} from '../machine/claims/sandbox-identity.js'
import { SPARE_SHELL_VARIABLE } from '../machine/launch/agent-environment.js'
import { assertHostTool, HOST_TOOLS } from '../machine/launch/host-tools.js'
import {
	HOST_SHELL_PATH,
	materializeAgentRuntime,
	planAgentRuntime,
	runtimeDirName,
	runtimeFilesOf,
} from '../machine/launch/runtime-cache.js'
import { LocalPathOptionError } from '../machine/machine-errors.js'
import {
	ALLOW_ALL_RESOLV_CONF,
	ALLOW_ALL_RESOLV_CONF_NAME,
	PROXIED_RESOLV_CONF,
	resolvConfTarget,
} from '../machine/network/egress-network.js'
import {
	EGRESS_BRIDGE_DIR_NAME,
	EGRESS_TRUST_BUNDLE_NAME,
	hasSystemTrustBundle,
	SYSTEM_TRUST_BUNDLE,
} from '../machine/network/sandbox-egress-proxy.js'
import { isWithin } from '../machine/path-containment.js'
import { sandboxSeccompFilter } from '../machine/seccomp/seccomp-filter.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import { checkHiddenPath, checkReadOnlyPath } from '../machine/spec/path-options.js'
import type { TmpfsSizes } from '../machine/spec/sandbox-limits.js'
import {
	createSandboxDirectories,
	resolveStateBase,
	type SandboxDirectories,
	sandboxRootFor,
} from '../machine/workspace/sandbox-directories.js'
import { firstUnsearchable, stageBind } from '../machine/workspace/staging-mounts.js'
import {
	type EphemeralWorkspace,
	prepareEphemeralWorkspace,
} from '../machine/workspace/volume-workspace.js'
import { handOverUnderLock } from '../machine/workspace/workspace-handover.js'
import { buildBwrapArgs } from './bwrap-argv.js'

const SECCOMP_FILTER_NAME = 'seccomp.bpf'

import { maskTargetsOf, readHostRootLayout } from './host-root-layout.js'
import type { ResolvedLocalBackendConfig } from './local-backend-config.js'
import { LocalStateDirUnreachableError } from './local-errors.js'
import {
	AGENT_BUNDLE_PATH,
	AGENT_NODE_PATH,
	type BindSource,
	type HostRootLayout,
	planSandboxRoot,
	type SandboxRootPlan,
	SPARE_SHELL_PATH,
	underSystemBinds,
} from './sandbox-root.js'

export interface ConfinementInput {
	readonly id: string
	readonly backend: ResolvedLocalBackendConfig
	readonly spec: MachineSandboxSpec
	readonly agentPath: string
	/** Writable home inside the private /tmp. */
	readonly homeDir: string
	readonly hostname: string
	/** Sizes of the private tmpfs mounts (`sandbox-limits.ts`). */
	readonly tmpfsSizes?: TmpfsSizes
	readonly signal?: AbortSignal
}

/** What the bwrap command line needs that is known only once the sandbox's cgroups exist. */
export interface BwrapLaunch {
	/** allow-all's `--info-fd` / `--sync-fd` (their numbers follow the cgroup descriptors). */
	readonly networkArgs: readonly string[]
	/** False when per-command groups are cgroup v2 (`BwrapPlan.unshareCgroupNamespace`). */
	readonly unshareCgroupNamespace: boolean
	/** bwrap's descriptor of `seccompFilter` (after the network's). */
	readonly seccompFd?: number
}

export interface SandboxConfinement {
	readonly identity: SandboxIdentity
	readonly dirs: SandboxDirectories
	readonly plan: SandboxRootPlan
	/** The host uid/gid the sandbox runs as (`identity`'s). */
	readonly owner: { readonly uid: number; readonly gid: number }
	/** A fork's workspace already holds its checkpoint's files (a clone of its image): no fill. */
	readonly workspaceSeeded: boolean
	/** bubblewrap and its arguments (program first), behind `setpriv` with a per-sandbox uid. */
	command(launch: BwrapLaunch): readonly string[]
	/** The seccomp program (classic BPF) in the state root, for bwrap's `--seccomp`. */
	readonly seccompFilter: string
	/** The `node` the workload finds first on PATH (readable, unlike the agent's). */
	readonly workloadNodePath: string
	/** Agent settings the root provides for (the spare shell, when bound). */
	readonly agentSettings: Readonly<Record<string, string>>
	/** The record of what the sandbox holds on the host, as it stands. */
	claims(): SandboxHostClaims
	/** Adds to the record (its cgroups before they are made, the launched process once it runs). */
	record(update: HostClaimsUpdate): Promise<void>
	/** Undoes every claim and removes the state root. Only once every process is gone. Idempotent. */
	release(): Promise<void>
}

interface Preparation {
	readonly input: ConfinementInput
	readonly base: string
	readonly identity: SandboxIdentity
	readonly dirs: SandboxDirectories
	readonly ledger: HostClaimsLedger
}

function perSandbox(
	identity: SandboxIdentity,
): identity is Extract<SandboxIdentity, { mode: 'per-sandbox-uid' }> {
	return identity.mode === 'per-sandbox-uid'
}

/** A source the sandbox uid can open as it is, or a staging bind of it that it can. */
async function reachable(prep: Preparation, source: string, stagingName: string): Promise<string> {
	if (
		!perSandbox(prep.identity) ||
		(await firstUnsearchable(source, prep.identity)) === undefined
	) {
		return source
	}
	const target = join(prep.dirs.root, STAGING_DIR_NAME, stagingName)
	await prep.ledger.record({ stagingMounts: [...prep.ledger.current.stagingMounts, target] })
	await stageBind(source, target)
	return target
}

async function handOverCallerWorkspace(prep: Preparation): Promise<void> {
	const { identity, dirs, ledger } = prep
	if (!perSandbox(identity) || !dirs.callerOwnsWorkspace) return
	await handOverUnderLock({
		path: dirs.workspace,
		sandboxId: prep.input.id,
		stateBase: prep.base,
		stateRoot: dirs.root,
		ledger,
		holder: identity,
		uidRange: prep.input.backend.sandboxUidRange,
		...(prep.input.signal ? { signal: prep.input.signal } : {}),
	})
}

/** `readOnlyPaths` resolved and checked against the host (before anything is claimed). */
async function resolveReadOnlyPaths(prep: Preparation): Promise<BindSource[]> {
	const { backend, spec } = prep.input
	const lists = [
		['backend.readOnlyPaths', backend.readOnlyPaths],
		['readOnlyPaths', spec.readOnlyPaths ?? []],
	] as const
	const binds: BindSource[] = []
	for (const [name, paths] of lists) {
		for (const [index, path] of paths.entries()) {
			const parameter = `${name}[${index}]`
			let real: string
			try {
				real = await realpath(path)
			} catch (error) {
				const code = (error as NodeJS.ErrnoException).code ?? 'error'
				throw new LocalPathOptionError(parameter, 'missing', path, `does not exist (${code})`)
			}
			checkReadOnlyPath(parameter, path, real, prep.base)
			binds.push({ source: real, target: path })
		}
	}
	return binds
}

async function hiddenTargets(prep: Preparation) {
	const { backend, spec } = prep.input
	const lists = [
		['backend.hiddenPaths', backend.hiddenPaths],
		['hiddenPaths', spec.hiddenPaths ?? []],
	] as const
	for (const [name, paths] of lists) {
		for (const [index, path] of paths.entries()) {
			checkHiddenPath(`${name}[${index}]`, path, prep.dirs.workspace)
		}
	}
	return maskTargetsOf([...backend.hiddenPaths, ...(spec.hiddenPaths ?? [])])
}

/**
 * `/etc/resolv.conf` is often a symlink into /run (systemd-resolved, resolvconf), which the
 * sandbox replaces with an empty tmpfs; its target is bound back read-only so DNS keeps working.
 * allow-all instead gets a file naming slirp4netns's forwarder bound there (the host's resolver is
 * a host address the guard refuses). No resolv.conf on the host: nothing is bound, and resolution
 * inside fails as it does on the host.
 */
async function resolverBind(prep: Preparation, layout: HostRootLayout): Promise<BindSource[]> {
	const real = await resolvConfTarget()
	if (real === undefined) return []
	const { egress } = prep.input.spec
	if (egress === 'allow-all' || egress === 'proxied') {
		const source = join(prep.dirs.root, ALLOW_ALL_RESOLV_CONF_NAME)
		await writeFile(source, egress === 'allow-all' ? ALLOW_ALL_RESOLV_CONF : PROXIED_RESOLV_CONF)
		// Readable by the sandbox uid whatever the umask.
		await chmod(source, 0o644)
		return [{ source, target: real }]
	}
	return underSystemBinds(real, layout) ? [] : [{ source: real, target: real }]
}

/**
 * A proxied sandbox's bridge: the directory the host's egress proxy listens in, bound read-only at
 * `EGRESS_BRIDGE_DIR` (connecting to a socket needs no write access to its mount), and — with
 * credentials — a trust bundle over the system's, filled in once the proxy has minted its CA.
 */
async function egressBinds(prep: Preparation): Promise<BindSource[]> {
	const { spec } = prep.input
	if (spec.egress !== 'proxied') return []
	const bridge = join(prep.dirs.root, EGRESS_BRIDGE_DIR_NAME)
	await mkdir(bridge, { mode: 0o755 })
	await chmod(bridge, 0o755)
	const binds: BindSource[] = [{ source: bridge, target: EGRESS_BRIDGE_DIR }]
	if ((spec.proxiedEgress?.credentials.length ?? 0) > 0 && (await hasSystemTrustBundle())) {
		const bundle = join(prep.dirs.root, EGRESS_TRUST_BUNDLE_NAME)
		await writeFile(bundle, '', { mode: 0o644 })
		binds.push({ source: bundle, target: await realpath(SYSTEM_TRUST_BUNDLE) })
	}
	return binds
}

/**
 * The ephemeral workspace (already the sandbox uid's) gets its filesystem: one of `diskLimitMb`,
 * or the copy-on-write volume its checkpoints clone from; recorded before it is mounted.
 */
async function mountEphemeralWorkspace(prep: Preparation): Promise<EphemeralWorkspace> {
	if (prep.dirs.callerOwnsWorkspace) return 'empty'
	const { from } = prep.input.spec
	return prepareEphemeralWorkspace(prep.ledger, {
		root: prep.dirs.root,
		workspace: prep.dirs.workspace,
		diskLimitMb: prep.input.spec.diskLimitMb,
		owner: prep.identity,
		mkfsPath: prep.input.backend.tools.mkfsExt4,
		sandboxId: prep.input.id,
		checkpointable: true,
		...(from === undefined ? {} : { from }),
	})
}

/** Where the workload's node must be bound, when the host's binary is not visible as it is. */
async function workloadNodeTarget(
	nodePath: string,
	layout: HostRootLayout,
	binds: readonly BindSource[],
): Promise<string | undefined> {
	const real = await realpath(nodePath)
	const visible = (path: string) =>
		underSystemBinds(path, layout) || binds.some((bind) => isWithin(path, bind.target))
	return visible(nodePath) && visible(real) ? undefined : real
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46])

/**
 * The agent's node must be a binary: a script runs through an interpreter that reads it, so an
 * unreadable copy would not start, and whatever it execs would be readable (and dumpable) again.
 */
async function assertNodeBinary(nodePath: string): Promise<void> {
	let head = Buffer.alloc(0)
	try {
		const file = await open(nodePath, 'r')
		try {
			const { buffer, bytesRead } = await file.read(Buffer.alloc(4), 0, 4, 0)
			head = buffer.subarray(0, bytesRead)
		} finally {
			await file.close()
		}
	} catch (error) {
		const code = (error as NodeJS.ErrnoException).code ?? 'error'
		throw new SandboxConfigError('backend.nodePath', `${nodePath} is not readable (${code})`)
	}
	if (!head.equals(ELF_MAGIC)) {
		throw new SandboxConfigError(
			'backend.nodePath',
			`${nodePath} is not an executable binary (a script or shim cannot run the agent from an unreadable copy); point it at the node binary itself`,
		)
	}
}

/** The sandbox's seccomp program, written where only the host reads it (bwrap gets a descriptor). */
async function writeSeccompFilter(root: string, spec: MachineSandboxSpec): Promise<string> {
	const path = join(root, SECCOMP_FILTER_NAME)
	const filter = sandboxSeccompFilter({ allowUserNamespaces: spec.allowUserNamespaces === true })
	await writeFile(path, filter.bpf(), { mode: 0o400, flag: 'wx' })
	return path
}

async function prepare(
	prep: Preparation,
): Promise<Omit<SandboxConfinement, 'claims' | 'record' | 'release'>> {
	const { input, dirs } = prep
	const { backend, spec, signal } = input
	const layout = await readHostRootLayout()
	const wanted = [
		...(await resolveReadOnlyPaths(prep)),
		...(await resolverBind(prep, layout)),
		...(await egressBinds(prep)),
	]
	const hidden = await hiddenTargets(prep)
	const workspace = await mountEphemeralWorkspace(prep)
	await handOverCallerWorkspace(prep)
	signal?.throwIfAborted()
	const workspaceSource = await reachable(prep, dirs.workspace, 'workspace')
	const readOnly: BindSource[] = []
	for (const [index, bind] of wanted.entries()) {
		readOnly.push({
			source: await reachable(prep, bind.source, `ro-${index}`),
			target: bind.target,
		})
	}
	await assertNodeBinary(backend.nodePath)
	const nodeTarget = await workloadNodeTarget(backend.nodePath, layout, readOnly)
	signal?.throwIfAborted()
	const runtimePlan = await planAgentRuntime(prep.base, {
		nodePath: backend.nodePath,
		agentPath: input.agentPath,
		readableNode: nodeTarget !== undefined,
		shellPath: HOST_SHELL_PATH,
	})
	// Named before they are written: the cache's reaper keeps what a live record names.
	await prep.ledger.record({ runtimeFiles: runtimeFilesOf(runtimePlan.files) })
	const runtime = await materializeAgentRuntime(runtimePlan)
	if (nodeTarget !== undefined && runtime.workloadNode !== undefined) {
		readOnly.push({ source: runtime.workloadNode, target: nodeTarget })
	}
	const plan = planSandboxRoot({
		layout,
		workspace: { source: workspaceSource, target: dirs.workspace },
		homeDir: input.homeDir,
		runtime,
		readOnly,
		hidden,
		...(input.tmpfsSizes ? { tmpfsSizes: input.tmpfsSizes } : {}),
	})
	const command = (launch: BwrapLaunch) => {
		const bwrap = buildBwrapArgs({
			root: plan.mounts,
			egress: spec.egress,
			networkArgs: launch.networkArgs,
			unshareCgroupNamespace: launch.unshareCgroupNamespace,
			hostname: input.hostname,
			...(launch.seccompFd === undefined ? {} : { seccompFd: launch.seccompFd }),
			command: [AGENT_NODE_PATH, AGENT_BUNDLE_PATH],
		})
		return withSandboxIdentity(HOST_TOOLS.setpriv, prep.identity, [backend.bwrapPath, ...bwrap])
	}
	return {
		identity: prep.identity,
		dirs,
		plan,
		owner: { uid: prep.identity.uid, gid: prep.identity.gid },
		workspaceSeeded: workspace === 'seeded',
		command,
		seccompFilter: await writeSeccompFilter(dirs.root, spec),
		workloadNodePath: nodeTarget ?? backend.nodePath,
		agentSettings:
			runtime.spareShell === undefined ? {} : { [SPARE_SHELL_VARIABLE]: SPARE_SHELL_PATH },
	}
}

export async function prepareConfinement(input: ConfinementInput): Promise<SandboxConfinement> {
	const { id, backend, spec } = input
	const base = await resolveStateBase(backend.stateDir)
	const stateRoot = sandboxRootFor(base, id)
	const identity = await allocateSandboxIdentity(base, backend.sandboxUidRange, { id, stateRoot })
	let dirs: SandboxDirectories
	try {
		if (perSandbox(identity)) {
			await assertHostTool('setpriv', 'start bubblewrap as the sandbox uid')
			const blocked = await firstUnsearchable(join(base, runtimeDirName()), identity)
			if (blocked !== undefined) throw new LocalStateDirUnreachableError(backend.stateDir, blocked)
		}
		dirs = await createSandboxDirectories(
			base,
			id,
			spec.workingDirectory,
			perSandbox(identity) ? identity : undefined,
		)
	} catch (error) {
		await releaseSandboxIdentity(identity, id)
		throw error
	}
	const owner = await readProcessIdentity(process.pid)
	const ledger = new HostClaimsLedger({
		...emptyClaims(id, dirs.root, owner),
		...(perSandbox(identity)
			? { identity: { uid: identity.uid, gid: identity.gid, lockPath: identity.lockPath } }
			: {}),
	})
	let releasing: Promise<void> | undefined
	const release = () => {
		releasing ??= releaseHostClaims(ledger.current).then(() => removeStateRoot(dirs.root))
		return releasing
	}
	try {
		await ledger.record({})
		const prepared = await prepare({ input, base, identity, dirs, ledger })
		return {
			...prepared,
			claims: () => ledger.current,
			record: (update) => ledger.record(update),
			release,
		}
	} catch (error) {
		await release().catch(() => undefined)
		throw error
	}
}
