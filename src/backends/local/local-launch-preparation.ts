/**
 * What a local launch runs and owns before its process starts. Under bubblewrap that is
 * `sandbox-confinement.ts`; under isolation 'none' it is `prepareUnconfined` below: the agent a
 * plain child of the host, as the host user, from the checkout.
 */

import type { CgroupOwner } from '../machine/cgroups/workload-cgroups.js'
import { emptyClaims, type SandboxHostClaims } from '../machine/claims/host-claims.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import {
	HostClaimsLedger,
	type HostClaimsUpdate,
	releaseHostClaims,
} from '../machine/claims/release-host-claims.js'
import type { MachineSandboxSpec } from '../machine/spec/machine-sandbox-spec.js'
import {
	createSandboxDirectories,
	removeSandboxDirectories,
	type SandboxDirectories,
} from '../machine/workspace/sandbox-directories.js'
import {
	type EphemeralWorkspace,
	prepareEphemeralWorkspace,
} from '../machine/workspace/volume-workspace.js'
import type { LocalInstanceContext } from './local-instance.js'
import type { BwrapLaunch } from './sandbox-confinement.js'

/** What a launch runs and owns before the process starts: directories, command, host claims. */
export interface LaunchPreparation {
	readonly dirs: SandboxDirectories
	/**
	 * Host uid/gid the sandbox runs as: its own on a root host, else the host user. Owns the `work/`
	 * cgroups and the sized workspace.
	 */
	readonly owner: CgroupOwner
	/** A fork's workspace already holds its checkpoint's files (a clone of its image): no fill. */
	readonly workspaceSeeded?: boolean
	/**
	 * Program first: bwrap (behind setpriv with a per-sandbox uid), or the plain agent; `launch`
	 * carries what is known only once the cgroups exist.
	 */
	command(launch: BwrapLaunch): readonly string[]
	/** bwrap's seccomp program (absent under isolation 'none': nothing applies one). */
	readonly seccompFilter?: string
	/** The node the workload finds first on PATH. */
	readonly workloadNodePath: string
	/** Agent settings the launch provides for (`NAMZU_AGENT_SPARE_SHELL` when confined). */
	readonly agentSettings?: Readonly<Record<string, string>>
	claims(): SandboxHostClaims
	/** Adds to the record: the cgroups before they are made, the launched process once it runs. */
	record(update: HostClaimsUpdate): Promise<void>
	/** Undoes the claims and removes the state root; only once every process is gone. */
	release(): Promise<void>
}

/** Isolation 'none': the agent is a plain child of the host, as the host user, from the checkout. */
export async function prepareUnconfined(
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
	let workspace: EphemeralWorkspace = 'empty'
	try {
		await ledger.record({})
		if (!dirs.callerOwnsWorkspace) {
			workspace = await prepareEphemeralWorkspace(ledger, {
				root: dirs.root,
				workspace: dirs.workspace,
				diskLimitMb: spec.diskLimitMb,
				owner,
				mkfsPath: backend.tools.mkfsExt4,
				sandboxId: id,
				checkpointable: true,
				...(spec.from === undefined ? {} : { from: spec.from }),
			})
		}
	} catch (error) {
		await release().catch(() => undefined)
		throw error
	}
	return {
		dirs,
		owner,
		workspaceSeeded: workspace === 'seeded',
		command: () => [backend.nodePath, context.agentPath],
		workloadNodePath: backend.nodePath,
		claims: () => ledger.current,
		record: (update) => ledger.record(update),
		release,
	}
}
