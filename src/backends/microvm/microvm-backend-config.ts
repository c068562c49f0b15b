/**
 * `MicroVMBackendConfig`: the microVM tier run on this host by a VMM process, `service: 'qemu'`
 * (booted for real: KVM when it boots a stock guest here, TCG otherwise) or `'firecracker'` (its
 * API driver, tested to its protocol boundary). The Kubernetes arm (`service: 'kubernetes'`) is
 * `KubernetesBackendConfig`. Checked once, each bad field named.
 */
import { tmpdir } from 'node:os'
import { isAbsolute } from 'node:path'
import {
	CONFIG_SITE,
	optionalBoolean,
	optionalDurationMs,
	optionalInteger,
	requireString,
} from '../../contract/argument-validators.js'
import { SandboxConfigError } from '../../contract/errors.js'
import { DEFAULT_SNAPSHOT_CACHE_MAX_ENTRIES } from '../machine/snapshots/snapshot-eviction.js'

/** How QEMU executes the guest: `kvm`, `tcg` (emulation), or `auto` (KVM when it boots here). */
export type MicroVMAccel = 'auto' | 'kvm' | 'tcg'

/**
 * The microVM tier on this host: `service: 'qemu'` boots each sandbox as a QEMU guest with its own
 * kernel from the `npm run image:build -- --vm` image; `'firecracker'` is typed and refused at
 * `create()` where no Firecracker runs (`MicroVMServiceUnavailableError`).
 */
export interface MicroVMBackendConfig {
	readonly tier: 'microvm'
	readonly service: 'qemu' | 'firecracker'
	/**
	 * Directory holding `vmlinuz`, `initramfs.cpio.gz` and `rootfs.ext4`. Default: the image
	 * `npm run image:build -- --vm` last built (its cache, like the container image's).
	 */
	readonly imageDir?: string
	/** The QEMU binary. Default `qemu-system-x86_64` from PATH. */
	readonly qemuBinary?: string
	/** Default `auto`. */
	readonly accel?: MicroVMAccel
	/** vCPUs per guest. Default 1. */
	readonly cpuLimit?: number
	/** Boot to a healthy agent within this long. Default 300 000 (TCG on a loaded host is slow). */
	readonly bootTimeoutMs?: number
	/** Guests booted ahead of `create()` with the provider's defaults. Default 0. */
	readonly warmPoolSize?: number
	/**
	 * Start guests from a memory snapshot of a booted, agent-ready guest instead of booting each:
	 * the first start of a machine shape (RAM, vCPUs, workspace disk, network) boots a template
	 * guest and saves it into `namzu-snapshot-cache/` under `stateDir`; every later start of that
	 * shape restores from it and is re-identified (new token, reseeded entropy, new boot id). A
	 * create with `env` or a `static` / `resolver` egress boots as before. Default `false`.
	 */
	readonly startFromSnapshot?: boolean
	/**
	 * Warm-start snapshots kept in `stateDir` (one per machine shape; each holds a guest's RAM on
	 * disk): saving one more evicts the least recently started from, never one a start is reading.
	 * Default 4.
	 */
	readonly snapshotCacheMaxEntries?: number
	/**
	 * Where each guest's directory (`namzu-sbx-<id>/`), memory checkpoints (`namzu-checkpoints/`)
	 * and warm-start snapshots (`namzu-snapshot-cache/`) are kept, absolute. Default: the OS
	 * temporary directory, like the other tiers on this machine.
	 */
	readonly stateDir?: string
}

/** The config with every default applied. */
export interface ResolvedMicroVMConfig {
	readonly service: 'qemu' | 'firecracker'
	readonly imageDir?: string
	readonly qemuBinary: string
	readonly accel: MicroVMAccel
	readonly cpuLimit: number
	readonly bootTimeoutMs: number
	readonly warmPoolSize: number
	readonly startFromSnapshot: boolean
	readonly snapshotCacheMaxEntries: number
	readonly stateDir: string
}

export const DEFAULT_MICROVM_BOOT_TIMEOUT_MS = 300_000
/** QEMU's `-smp` ceiling we accept; far above what a sandbox should ask for. */
const MAX_VCPUS = 64

function absoluteStateDir(value: unknown): string {
	if (value === undefined) return tmpdir()
	if (typeof value !== 'string' || !isAbsolute(value)) {
		throw new SandboxConfigError('stateDir', 'must be an absolute path')
	}
	return value
}

export function resolveMicroVMConfig(config: MicroVMBackendConfig): ResolvedMicroVMConfig {
	if (
		config.tier !== 'microvm' ||
		(config.service !== 'qemu' && config.service !== 'firecracker')
	) {
		throw new SandboxConfigError('service', "must be 'qemu' or 'firecracker' with tier 'microvm'")
	}
	const accel = config.accel ?? 'auto'
	if (accel !== 'auto' && accel !== 'kvm' && accel !== 'tcg') {
		throw new SandboxConfigError('accel', "must be 'auto', 'kvm' or 'tcg'")
	}
	return {
		service: config.service,
		...(config.imageDir === undefined
			? {}
			: { imageDir: requireString(CONFIG_SITE, 'imageDir', config.imageDir) }),
		qemuBinary:
			config.qemuBinary === undefined
				? 'qemu-system-x86_64'
				: requireString(CONFIG_SITE, 'qemuBinary', config.qemuBinary),
		accel,
		cpuLimit:
			optionalInteger(CONFIG_SITE, 'cpuLimit', config.cpuLimit, { min: 1, max: MAX_VCPUS }) ?? 1,
		bootTimeoutMs:
			optionalDurationMs(CONFIG_SITE, 'bootTimeoutMs', config.bootTimeoutMs) ??
			DEFAULT_MICROVM_BOOT_TIMEOUT_MS,
		warmPoolSize:
			optionalInteger(CONFIG_SITE, 'warmPoolSize', config.warmPoolSize, { min: 0, max: 16 }) ?? 0,
		startFromSnapshot:
			optionalBoolean(CONFIG_SITE, 'startFromSnapshot', config.startFromSnapshot) ?? false,
		snapshotCacheMaxEntries:
			optionalInteger(CONFIG_SITE, 'snapshotCacheMaxEntries', config.snapshotCacheMaxEntries, {
				min: 1,
				max: 64,
			}) ?? DEFAULT_SNAPSHOT_CACHE_MAX_ENTRIES,
		stateDir: absoluteStateDir(config.stateDir),
	}
}
