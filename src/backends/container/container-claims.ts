/**
 * What a container start checks and claims on the host before anything runs: root, the image,
 * the network's tools, an enforceable disk limit; then the id, the sandbox uid and its lock, the
 * state directories and the host-claims record that a crashed host's reaper reads.
 */

import type { CgroupOwner } from '../machine/cgroups/workload-cgroups.js'
import { emptyClaims } from '../machine/claims/host-claims.js'
import { readProcessIdentity } from '../machine/claims/process-identity.js'
import { HostClaimsLedger } from '../machine/claims/release-host-claims.js'
import { newSandboxId } from '../machine/claims/sandbox-id.js'
import {
	allocateSandboxIdentity,
	releaseSandboxIdentity,
} from '../machine/claims/sandbox-identity.js'
import { assertNetworkUsable } from '../machine/network/egress-network.js'
import {
	createSandboxDirectories,
	resolveStateBase,
	type SandboxDirectories,
	STATE_DIR_PREFIX,
	sandboxRootFor,
} from '../machine/workspace/sandbox-directories.js'
import { assertDiskLimitEnforceable } from '../machine/workspace/workspace-disk.js'
import type { ResolvedContainerBackendConfig } from './container-backend-config.js'
import { ContainerRuntimeUnavailableError } from './container-errors.js'
import type { ContainerImage } from './container-image.js'
import type { ContainerInstanceContext } from './container-instance.js'
import type { ContainerSandboxSpec } from './container-sandbox-spec.js'

/** What the host claimed before the start: the id, the sandbox uid, the directories, the record. */
export interface ContainerClaims {
	readonly id: string
	/** `namzu-sbx-<id>`: the container id and the cgroup name. */
	readonly name: string
	/** The state directory the sandbox's root lives in. */
	readonly base: string
	readonly owner: CgroupOwner
	readonly dirs: SandboxDirectories
	readonly ledger: HostClaimsLedger
}

/** Names what is missing before anything is claimed; resolves the image. */
export async function checkContainerHost(
	context: ContainerInstanceContext,
	spec: ContainerSandboxSpec,
): Promise<ContainerImage> {
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
	return image
}

/** The id, its own host uid, the directories and the record; a failure gives the uid back. */
export async function claimContainerSandbox(
	backend: ResolvedContainerBackendConfig,
): Promise<ContainerClaims> {
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
	return { id, name, base, owner, dirs, ledger }
}
