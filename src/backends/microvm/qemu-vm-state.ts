/**
 * A QEMU guest's whole state on disk, and back: the RAM and device state (a migration stream into
 * a file, since QEMU 7.2 has no `file:` URI: `exec:cat`), its root overlay and its sized workspace
 * disk, all taken with the vCPUs stopped so the disks agree with the page cache in the RAM image.
 * Saving stops the VM, migrates (a stopped VM is one pass), copies the disks once the migration
 * has flushed and released them, and continues it. Loading is a QEMU started with `-incoming
 * defer` and the same devices: `migrate-incoming` from the file, then `cont` (a VM saved stopped
 * arrives stopped).
 */
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { runProgramOrThrow } from '../machine/launch/host-tools.js'
import { MicroVMServiceUnavailableError, QemuMonitorError } from './microvm-errors.js'
import type { QemuMonitor } from './qemu-monitor.js'

/** Names inside a checkpoint's directory. */
export const VM_STATE_FILES = {
	memory: 'memory.bin',
	rootOverlay: 'root.qcow2',
	workspaceDisk: 'workspace.img',
} as const

const CP = '/usr/bin/cp'
const MIGRATION_POLL_MS = 20
/** QEMU's default migration bandwidth cap (128 MiB/s) is for live networks, not a local file. */
const FILE_MIGRATION_BYTES_PER_SECOND = 64 * 1024 ** 3

/** A copy sharing extents where the filesystem has reflinks; sparse files stay sparse. */
export function copyDisk(from: string, to: string, signal?: AbortSignal): Promise<void> {
	return runProgramOrThrow(CP, ['--reflink=auto', '--sparse=always', '--', from, to], {
		...(signal ? { signal } : {}),
	})
}

/** `qemu-img` beside the QEMU binary when that is a path, else from PATH (like QEMU itself). */
function qemuImgBeside(qemuBinary: string): string {
	return qemuBinary.includes('/') ? join(dirname(qemuBinary), 'qemu-img') : 'qemu-img'
}

/**
 * The guest's root disk: a qcow2 overlay at `overlay` over the shared raw image, which stays
 * unwritten (QEMU opens a backing file read-only).
 */
export async function createRootOverlay(
	qemuBinary: string,
	rootDisk: string,
	overlay: string,
	signal?: AbortSignal,
): Promise<void> {
	const qemuImg = qemuImgBeside(qemuBinary)
	try {
		await runProgramOrThrow(
			qemuImg,
			['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', rootDisk, overlay],
			{ ...(signal ? { signal } : {}) },
		)
	} catch (error) {
		if (signal?.aborted) throw signal.reason
		throw new MicroVMServiceUnavailableError(
			'qemu',
			`${qemuImg} could not create the guest's root overlay (install qemu-utils): ${error instanceof Error ? error.message : String(error)}`,
			{ cause: error },
		)
	}
}

/** A path as one word for `/bin/sh -c` (QEMU runs an `exec:` URI through it). */
function shellWord(path: string): string {
	return `'${path.replaceAll("'", "'\\''")}'`
}

/** Polls `query-migrate` until the migration completed; a failure or an abort is an error. */
async function migrationDone(monitor: QemuMonitor, signal: AbortSignal | undefined) {
	for (;;) {
		const state = (await monitor.execute('query-migrate')) as {
			readonly status?: string
			readonly 'error-desc'?: string
		}
		if (state.status === 'completed') return
		if (state.status === 'failed' || state.status === 'cancelled') {
			throw new QemuMonitorError('migrate', state['error-desc'] ?? state.status)
		}
		if (signal?.aborted) {
			await monitor.execute('migrate_cancel').catch(() => undefined)
			throw signal.reason
		}
		await sleep(MIGRATION_POLL_MS)
	}
}

export interface SavedDisks {
	readonly rootOverlay: string
	readonly workspaceDisk: string | undefined
}

/**
 * Writes the running guest's state into `dir` (`VM_STATE_FILES`) under one stop of its vCPUs;
 * the guest always continues, whatever failed.
 */
export async function saveVmState(
	monitor: QemuMonitor,
	disks: SavedDisks,
	dir: string,
	signal?: AbortSignal,
): Promise<void> {
	await monitor.execute('migrate-set-parameters', {
		'max-bandwidth': FILE_MIGRATION_BYTES_PER_SECOND,
	})
	await monitor.execute('stop')
	try {
		const memory = join(dir, VM_STATE_FILES.memory)
		await monitor.execute('migrate', { uri: `exec:cat > ${shellWord(memory)}` })
		await migrationDone(monitor, signal)
		// The migration flushed every disk and released it to a destination: the files are whole.
		await copyDisk(disks.rootOverlay, join(dir, VM_STATE_FILES.rootOverlay), signal)
		if (disks.workspaceDisk !== undefined) {
			await copyDisk(disks.workspaceDisk, join(dir, VM_STATE_FILES.workspaceDisk), signal)
		}
	} finally {
		// `cont` takes the disks back after a completed migration (and is a no-op pause's end).
		await monitor.execute('cont')
	}
}

/** Loads `memoryFile` into a QEMU started with `-incoming defer`, and runs it. */
export async function loadVmState(
	monitor: QemuMonitor,
	memoryFile: string,
	signal?: AbortSignal,
): Promise<void> {
	await monitor.execute('migrate-incoming', { uri: `exec:cat ${shellWord(memoryFile)}` })
	await migrationDone(monitor, signal)
	await monitor.execute('cont')
}
