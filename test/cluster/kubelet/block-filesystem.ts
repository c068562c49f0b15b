/**
 * The filesystem on a block claim, standing in for the guest image's entrypoint (which will do
 * this itself later): a device that `blkid -p` proves empty is formatted ext4 with its root owned
 * by the host uid/gid the container's `runAsUser`/`runAsGroup` map to; a device that carries any
 * signature is never formatted again, and an existing ext4 is checked with `e2fsck` first. Mounts
 * are made on the host — `nosuid,nodev`, so nothing the guest plants there (it can write the raw
 * device) is worth more on the host than inside — in a per-pod directory that is bound into the
 * sandbox. Needs root.
 */
import { mkdir, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { describeFailure, execHost, type HostCommandResult } from './host-command.js'
import { BlockDiskError } from './kubelet-errors.js'
import { unmountQuietly } from './loop-devices.js'

const MKFS_TIMEOUT_MS = 60_000
/**
 * How long a check waits for a device another mount namespace still holds. On a host whose `/` is
 * private, a namespace created while the disk was mounted (a sandbox being set up, `unshare -m`)
 * keeps its own copy of that mount after ours is gone, and the kernel keeps the device claimed
 * until that namespace ends or drops the copy — usually milliseconds, longer on a loaded machine.
 */
const FSCK_BUSY_WAIT_MS = 30_000
const FSCK_BUSY_POLL_MS = 200

/** What `blkid -p` found on a device: a filesystem/partition-table type, or nothing. */
export async function probeSignature(device: string): Promise<string | undefined> {
	const args = ['-p', '-o', 'export', device]
	const result = await execHost('blkid', args)
	// blkid exits 2 when the device carries no recognisable signature at all.
	if (result.code === 2) return undefined
	if (result.code !== 0) {
		throw new BlockDiskError('probe-failed', describeFailure('blkid', args, result))
	}
	const fields = new Map(
		result.stdout
			.split('\n')
			.map((line) => line.split('='))
			.filter((pair): pair is [string, string] => pair.length >= 2 && pair[0] !== undefined)
			.map(([key, ...rest]) => [key, rest.join('=')]),
	)
	return fields.get('TYPE') ?? fields.get('PTTYPE') ?? 'unknown'
}

/**
 * The container's ids as host ids: bubblewrap maps the container's one uid and gid to the
 * kubelet's own, so a root owned by the kubelet is owned by `runAsUser:runAsGroup` inside.
 */
export function hostOwner(): { readonly uid: number; readonly gid: number } {
	return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
}

/**
 * Readies `device` for mounting: formats it ext4 if it carries no signature at all, or else —
 * ext4 the guest has written, raw device included — has `e2fsck -f -p` check it, so the host
 * kernel is not handed metadata that fsck cannot even repair. Any other signature is refused.
 * `busyWaitMs` bounds the wait for a device another mount namespace still holds.
 */
export async function ensureExt4(
	device: string,
	busyWaitMs: number = FSCK_BUSY_WAIT_MS,
): Promise<'formatted' | 'checked'> {
	const found = await probeSignature(device)
	if (found !== undefined) {
		if (found !== 'ext4') {
			throw new BlockDiskError(
				'not-ext4',
				`${device} carries a ${found} signature, not ext4: it is never reformatted`,
			)
		}
		await checkExt4(device, busyWaitMs)
		return 'checked'
	}
	const owner = hostOwner()
	const args = [
		'-q',
		'-m',
		'0',
		'-E',
		`root_owner=${owner.uid}:${owner.gid},lazy_itable_init=1,nodiscard`,
		device,
	]
	const result = await execHost('mkfs.ext4', args, MKFS_TIMEOUT_MS)
	if (result.code !== 0) {
		throw new BlockDiskError('mkfs-failed', describeFailure('mkfs.ext4', args, result))
	}
	return 'formatted'
}

/** e2fsck's exit 8 with "<device> is in use." (on stdout): its exclusive open was refused. */
export function heldByAnotherNamespace(result: HostCommandResult): boolean {
	return result.code === 8 && /\bis in use\b/.test(result.stdout)
}

/**
 * `e2fsck -f -p`: exit 0 clean, 1 or 2 repaired; anything else leaves the disk unmounted. A device
 * still held elsewhere is waited for, within a bound, rather than read as damage.
 */
async function checkExt4(device: string, busyWaitMs: number): Promise<void> {
	const args = ['-f', '-p', device]
	const deadline = Date.now() + busyWaitMs
	for (;;) {
		const result = await execHost('e2fsck', args, MKFS_TIMEOUT_MS)
		if (result.code === 0 || result.code === 1 || result.code === 2) return
		if (!heldByAnotherNamespace(result)) {
			throw new BlockDiskError('fsck-failed', describeFailure('e2fsck', args, result))
		}
		if (Date.now() >= deadline) {
			throw new BlockDiskError(
				'device-busy',
				`${device} is still claimed ${busyWaitMs} ms after its last mount here went: another mount namespace holds a copy of it (${describeFailure('e2fsck', args, result)})`,
			)
		}
		await delay(FSCK_BUSY_POLL_MS)
	}
}

/** Mounts the ext4 on `device` at `dir` (created), `nosuid,nodev`. */
export async function mountDisk(device: string, dir: string): Promise<void> {
	await mkdir(dir, { recursive: true })
	const args = ['-t', 'ext4', '-o', 'nosuid,nodev', device, dir]
	const result = await execHost('mount', args)
	if (result.code !== 0) {
		throw new BlockDiskError('mount-failed', describeFailure('mount', args, result))
	}
}

async function isMountPoint(dir: string): Promise<boolean> {
	try {
		const [inner, outer] = await Promise.all([stat(dir), stat(dirname(dir))])
		return inner.dev !== outer.dev
	} catch {
		return false
	}
}

/** Unmounts `dir` if it is a mount point; true when nothing is mounted there any more. */
export async function unmountDisk(dir: string): Promise<boolean> {
	if (!(await isMountPoint(dir))) return true
	await unmountQuietly(dir)
	return !(await isMountPoint(dir))
}
