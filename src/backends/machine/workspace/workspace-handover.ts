/**
 * A host directory handed to a sandbox uid for the sandbox's lifetime (`workspace-ownership.ts`),
 * under the workspace lock and the host-claims record: refused while another sandbox holds it (or
 * a sandbox uid owns it), recorded before anything changes hands, and given back from the record
 * by `releaseHostClaims`. A caller workspace on the local tier, a writable layout directory on the
 * container tier.
 */
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { claimsDirectory, takeLock, workspaceLockName } from '../claims/claim-locks.js'
import { OWNERSHIP_RECORD_NAME, workspaceLockPath } from '../claims/host-claims.js'
import type { HostClaimsLedger } from '../claims/release-host-claims.js'
import { inUidRange, type SandboxUidRange } from '../claims/sandbox-identity.js'
import { LocalWorkspaceBusyError } from '../machine-errors.js'
import { handOverWorkspace, type OwnershipHolder } from './workspace-ownership.js'

export interface WorkspaceHandOverInput {
	/** The directory's real path. */
	readonly path: string
	readonly sandboxId: string
	readonly stateBase: string
	readonly stateRoot: string
	readonly ledger: HostClaimsLedger
	readonly holder: OwnershipHolder
	readonly uidRange: SandboxUidRange
	readonly signal?: AbortSignal
}

export async function handOverUnderLock(input: WorkspaceHandOverInput): Promise<void> {
	const info = await stat(input.path)
	if (inUidRange(info.uid, input.uidRange)) {
		throw new LocalWorkspaceBusyError(input.path, `it is owned by sandbox uid ${info.uid}`)
	}
	const lockPath = workspaceLockPath(input.stateRoot, info.dev, info.ino)
	const workspace = {
		path: input.path,
		dev: info.dev,
		ino: info.ino,
		ownerUid: info.uid,
		ownerGid: info.gid,
		recordPath: join(input.stateRoot, OWNERSHIP_RECORD_NAME),
		lockPath,
	}
	await input.ledger.record({ workspace })
	const taken = await takeLock(
		await claimsDirectory(input.stateBase),
		workspaceLockName(info.dev, info.ino),
		{ id: input.sandboxId, stateRoot: input.stateRoot },
	)
	if (taken === undefined) throw new LocalWorkspaceBusyError(input.path, `${lockPath} is held`)
	await handOverWorkspace(workspace, input.holder, input.signal)
}
