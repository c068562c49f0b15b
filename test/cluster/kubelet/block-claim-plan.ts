/**
 * Decisions about block-mode claims, kept pure so they can be pinned by tables: how big a claim's
 * disk is (its storage request, rounded up to whole MiB, at least `MIN_BLOCK_BYTES`, refused over
 * the node's cap), and where a container's block workspace is mounted (the agreed rule: the first
 * block `volumeDevices` entry's filesystem appears at the container's `NAMZU_SANDBOX_WORKSPACE`,
 * `/workspace` when unset — standing in for the image entrypoint that will mount it itself).
 */
import type { PersistentVolumeClaim } from './kube-types.js'
import { formatBinaryQuantity, quantityBytes } from './quantity.js'

const MIB = 2 ** 20
/** Largest block claim this node provisions: a sparse file, but one a test could fill. */
export const MAX_BLOCK_BYTES = 4 * 2 ** 30
/** ext4 needs room for its metadata; smaller requests get this much. */
export const MIN_BLOCK_BYTES = 16 * MIB
export const DEFAULT_WORKSPACE = '/workspace'
export const WORKSPACE_ENV = 'NAMZU_SANDBOX_WORKSPACE'

export function isBlockClaim(claim: PersistentVolumeClaim): boolean {
	return claim.spec?.volumeMode === 'Block'
}

export type BlockSize =
	| { readonly ok: true; readonly bytes: number; readonly capacity: string }
	| { readonly ok: false; readonly message: string }

export function blockClaimSize(
	claim: PersistentVolumeClaim,
	maxBytes: number = MAX_BLOCK_BYTES,
): BlockSize {
	const name = claim.metadata.name ?? ''
	const requested = claim.spec?.resources?.requests?.storage
	if (requested === undefined) {
		return { ok: false, message: `persistentvolumeclaim "${name}" requests no storage` }
	}
	const bytes = quantityBytes(requested)
	if (bytes === undefined) {
		return {
			ok: false,
			message: `persistentvolumeclaim "${name}" requests storage "${requested}", not a quantity`,
		}
	}
	if (bytes > maxBytes) {
		return {
			ok: false,
			message: `persistentvolumeclaim "${name}" requests ${requested}, more than the ${formatBinaryQuantity(maxBytes)} this node provisions for a block claim`,
		}
	}
	const rounded = Math.max(MIN_BLOCK_BYTES, Math.ceil(bytes / MIB) * MIB)
	return { ok: true, bytes: rounded, capacity: formatBinaryQuantity(rounded) }
}

export type WorkspaceTarget =
	| { readonly ok: true; readonly path: string }
	| { readonly ok: false; readonly message: string }

/** Where the block workspace's filesystem is mounted, from the container's resolved env. */
export function blockWorkspaceTarget(env: Readonly<Record<string, string>>): WorkspaceTarget {
	const value = env[WORKSPACE_ENV]
	if (value === undefined || value === '') return { ok: true, path: DEFAULT_WORKSPACE }
	const normalised = value.replace(/\/+$/, '')
	if (!value.startsWith('/') || normalised === '' || normalised.split('/').includes('..')) {
		return {
			ok: false,
			message: `${WORKSPACE_ENV}="${value}" is not an absolute path below / for the block workspace`,
		}
	}
	return { ok: true, path: normalised }
}
