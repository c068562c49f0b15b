/**
 * Warm start of QEMU guests (`startFromSnapshot: true`): a template guest is booted to a ready
 * agent once, its state saved into the machine layer's snapshot cache (`snapshot-cache.ts`), and
 * every later start of the same machine is a restore from it through the path a fork takes
 * (`bootQemuGuest` with `restore`: copies of its disks, then `restored` — new token, reseeded
 * entropy, new boot id — before anyone else reaches the agent), under a new sandbox id.
 *
 * The cache key names everything the saved state depends on: the guest image's three files (path,
 * size, inode, mtime), the agent bundle's digest (the agent in the saved RAM is that build), the
 * QEMU version, the accelerator, and the machine (RAM, vCPUs, the sized workspace disk, the
 * network: `deny-all` or `allow-all`), plus the host's agent settings the guest's environment
 * carries. A change in any of them is another key: a stale snapshot is never started from.
 *
 * What differs per sandbox: `timeoutMs` is the host's and applies as ever. The caller's `env` is
 * read by the agent at its boot and a `static` / `resolver` policy needs a proxy and an in-guest
 * helper of the sandbox's own: a create with either boots (`bootReason` says which).
 */

import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { promisify } from 'node:util'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import { agentSettingsFrom } from '../machine/launch/agent-environment.js'
import { withCachedSnapshot } from '../machine/snapshots/snapshot-cache.js'
import { resolveStateBase } from '../machine/workspace/sandbox-directories.js'
import type { ResolvedMicroVMConfig } from './microvm-backend-config.js'
import {
	readVmState,
	saveGuestState,
	type VmCheckpoint,
	type VmConfig,
} from './microvm-checkpoints.js'
import { MicroVMSnapshotDamagedError } from './microvm-errors.js'
import type { MicroVMImage } from './microvm-image.js'
import { bootQemuGuest } from './qemu-guest.js'

/** Why a create under `startFromSnapshot` booted instead. */
export type SnapshotBootReason =
	/** The create gave `env`, which the agent reads at its boot. */
	| 'env'
	/** A `static` / `resolver` egress policy: its proxy and in-guest helper are the sandbox's own. */
	| 'egress-proxy'
	/** The restore from the snapshot failed (the error is in the event); the snapshot is discarded. */
	| 'restore-failed'

/** What a create asks for that a snapshot cannot carry, or undefined when it can start from one. */
export function snapshotBootReason(spec: {
	readonly env: Readonly<Record<string, string>>
	readonly egress?: unknown
}): SnapshotBootReason | undefined {
	if (Object.keys(spec.env).length > 0) return 'env'
	if (spec.egress !== undefined) return 'egress-proxy'
	return undefined
}

const execFileAsync = promisify(execFile)
const qemuVersions = new Map<string, Promise<string>>()
const bundleDigests = new Map<string, Promise<string>>()

function qemuVersion(binary: string): Promise<string> {
	let version = qemuVersions.get(binary)
	if (version === undefined) {
		version = execFileAsync(binary, ['--version']).then(
			({ stdout }) => (stdout.split('\n')[0] ?? '').trim(),
			() => 'unknown',
		)
		qemuVersions.set(binary, version)
	}
	return version
}

async function fileIdentity(path: string): Promise<string> {
	const info = await stat(path)
	return `${path}:${info.size}:${info.ino}:${info.mtimeMs}`
}

/** The agent bundle's sha256, once per file version. */
async function bundleDigest(path: string): Promise<string> {
	const identity = await fileIdentity(path)
	let digest = bundleDigests.get(identity)
	if (digest === undefined) {
		digest = readFile(path).then((bytes) => createHash('sha256').update(bytes).digest('hex'))
		bundleDigests.set(identity, digest)
	}
	return digest
}

/** The cache key of a guest of `vm` booted from `image` by this host (32 hex digits). */
export async function warmSnapshotKey(
	qemuBinary: string,
	image: MicroVMImage,
	vm: VmConfig,
): Promise<string> {
	const parts = {
		format: 1,
		image: await Promise.all([image.kernel, image.initramfs, image.rootDisk].map(fileIdentity)),
		agent: await bundleDigest(agentBundlePath()),
		qemu: await qemuVersion(qemuBinary),
		machine: {
			imageDir: vm.imageDir,
			accel: vm.accel,
			memoryMb: vm.memoryMb,
			vcpus: vm.vcpus,
			diskLimitMb: vm.diskLimitMb ?? null,
			network: vm.network ?? 'deny-all',
		},
		agentSettings: agentSettingsFrom(process.env),
	}
	return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32)
}

/** A snapshot in the cache. */
export interface WarmSnapshot {
	readonly key: string
	readonly dir: string
	/** Whether this start built it (booted the template and saved it first). */
	readonly built: boolean
}

/** The saved state in a snapshot's directory; a damaged one is an error (a failed restore). */
export async function warmSnapshotState(
	snapshot: WarmSnapshot,
): Promise<Pick<VmCheckpoint, 'config' | 'source'>> {
	const saved = await readVmState(snapshot.dir)
	if (saved === undefined) {
		throw new MicroVMSnapshotDamagedError(snapshot.dir)
	}
	return saved
}

/** How long a start waits for another process's build of its snapshot, beyond a boot's bound. */
export const SNAPSHOT_SAVE_WAIT_MS = 120_000

/**
 * Starts from the snapshot of `vm` (`start` runs while the entry is held: no eviction removes it
 * meanwhile), built when the cache has none: a template guest booted with no caller environment,
 * saved, and destroyed. Another process building the same snapshot is waited for (up to a boot
 * and a save) rather than booting a second template.
 */
export async function withWarmSnapshot<T>(
	config: ResolvedMicroVMConfig,
	image: MicroVMImage,
	vm: VmConfig,
	signal: AbortSignal,
	start: (snapshot: WarmSnapshot) => Promise<T>,
): Promise<T> {
	const key = await warmSnapshotKey(config.qemuBinary, image, vm)
	const stateBase = await resolveStateBase(config.stateDir)
	return withCachedSnapshot(
		stateBase,
		key,
		async (dir, buildSignal) => {
			const template = await bootQemuGuest({
				sandboxId: `template-${key.slice(0, 12)}`,
				qemuBinary: config.qemuBinary,
				image,
				accel: vm.accel,
				memoryMb: vm.memoryMb,
				vcpus: vm.vcpus,
				callerEnv: {},
				stateDir: config.stateDir,
				...(vm.diskLimitMb === undefined ? {} : { workspaceDiskMb: vm.diskLimitMb }),
				...(vm.network === 'allow-all' ? { allowAll: true } : {}),
				bootTimeoutMs: config.bootTimeoutMs,
				...(buildSignal ? { signal: buildSignal } : {}),
			})
			try {
				await saveGuestState(template, vm, dir, buildSignal)
			} finally {
				await template.destroy()
			}
		},
		(entry) => start({ key, dir: entry.dir, built: entry.built }),
		{
			buildWaitMs: config.bootTimeoutMs + SNAPSHOT_SAVE_WAIT_MS,
			maxEntries: config.snapshotCacheMaxEntries,
			signal,
		},
	)
}
