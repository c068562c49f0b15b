/**
 * The host uid a sandbox runs as. On a root host every sandbox gets its own uid/gid from
 * `backend.sandboxUidRange`, locked by an O_EXCL file under the state directory and released at
 * destroy: bwrap is started as that uid (`setpriv`), so uid 0 inside maps to it, whatever the
 * sandbox creates is owned by it, and nothing it plants can be set-id root. On a non-root host the
 * sandbox runs as the host user itself: setuid-to-self gains nothing, and the minimal root is what
 * keeps that user's own files out of reach.
 *
 * The default range starts at 0x70000000 (1 879 048 192) and holds 65 536 uids: far above login
 * users (1000…60000), the `nobody` uid 65534, and the subordinate ranges `useradd` hands out
 * (100000 upwards in blocks of 65536, so the first 28 000 users), and below 2^31, where some tools
 * still misread uids as signed.
 */
import { randomInt } from 'node:crypto'
import {
	CONFIG_SITE,
	requireInteger,
	requireObject,
} from '../../../contract/argument-validators.js'
import { LocalSandboxUidsExhaustedError } from '../machine-errors.js'
import {
	claimsDirectory,
	type LockOwner,
	releaseLock,
	takeLock,
	uidLockName,
} from './claim-locks.js'

/** A range of host uids reserved for sandboxes: `first` … `first + count - 1`. */
export interface SandboxUidRange {
	readonly first: number
	readonly count: number
}

/** The host uids sandboxes run as on a root host: one per sandbox, from 0x70000000 on. */
export const DEFAULT_SANDBOX_UID_RANGE: SandboxUidRange = { first: 0x7000_0000, count: 65_536 }
/** Ranges start above every uid a distribution assigns to system or login users. */
export const MIN_SANDBOX_UID = 65_536
/** `(uid_t)-1` means "unchanged" to chown and setresuid; the largest usable uid is one below. */
export const MAX_SANDBOX_UID = 0xffff_fffe

/** Who a sandbox runs as on the host. */
export type SandboxIdentity =
	| {
			readonly mode: 'per-sandbox-uid'
			readonly uid: number
			readonly gid: number
			readonly lockPath: string
	  }
	| { readonly mode: 'host-user'; readonly uid: number; readonly gid: number }

export function resolveSandboxUidRange(value: unknown): SandboxUidRange {
	if (value === undefined) return DEFAULT_SANDBOX_UID_RANGE
	const field = 'backend.sandboxUidRange'
	const range = requireObject(CONFIG_SITE, field, value)
	const first = requireInteger(CONFIG_SITE, `${field}.first`, range.first, {
		min: MIN_SANDBOX_UID,
		max: MAX_SANDBOX_UID,
	})
	const count = requireInteger(CONFIG_SITE, `${field}.count`, range.count, { min: 1 })
	if (first + count - 1 > MAX_SANDBOX_UID) {
		throw CONFIG_SITE.refuse(
			field,
			`a range ending at or below ${MAX_SANDBOX_UID}`,
			`${first} + ${count} - 1 = ${first + count - 1}`,
		)
	}
	return { first, count }
}

export function inUidRange(uid: number, range: SandboxUidRange): boolean {
	return uid >= range.first && uid < range.first + range.count
}

/** Whether sandboxes of this process get their own uid (only root can hand one out). */
export function perSandboxUids(): boolean {
	return process.getuid?.() === 0
}

/**
 * Locks a free uid of `range` for sandbox `owner`: tries from a random offset upwards, so
 * concurrent creates rarely contend. The gid equals the uid.
 */
export async function allocateSandboxIdentity(
	stateBase: string,
	range: SandboxUidRange,
	owner: LockOwner,
): Promise<SandboxIdentity> {
	if (!perSandboxUids()) {
		return { mode: 'host-user', uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
	}
	const dir = await claimsDirectory(stateBase)
	const start = range.count === 1 ? 0 : randomInt(range.count)
	for (let step = 0; step < range.count; step++) {
		const uid = range.first + ((start + step) % range.count)
		const lockPath = await takeLock(dir, uidLockName(uid), owner)
		if (lockPath !== undefined) return { mode: 'per-sandbox-uid', uid, gid: uid, lockPath }
	}
	throw new LocalSandboxUidsExhaustedError(range.first, range.count)
}

export async function releaseSandboxIdentity(identity: SandboxIdentity, id: string): Promise<void> {
	if (identity.mode === 'per-sandbox-uid') await releaseLock(identity.lockPath, id)
}

/** `setpriv` prefix that starts bwrap as the sandbox uid; none when it runs as the host user. */
export function withSandboxIdentity(
	setprivPath: string,
	identity: SandboxIdentity,
	command: readonly string[],
): string[] {
	if (identity.mode === 'host-user') return [...command]
	return [
		setprivPath,
		`--reuid=${identity.uid}`,
		`--regid=${identity.gid}`,
		'--clear-groups',
		'--',
		...command,
	]
}
