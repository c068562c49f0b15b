/**
 * Whether this host's KVM boots a stock guest: probed once per process (cached) by booting the
 * image's kernel and initramfs under `-accel kvm` to the initramfs's first line, which prints a
 * marker and powers off. A PVM host's KVM (these machines) opens fine and never gets there, so
 * `/dev/kvm` existing is not the answer. `accel: 'auto'` uses KVM only when the probe says so.
 */
import { spawn } from 'node:child_process'
import { constants } from 'node:fs'
import { access, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ResolvedMicroVMConfig } from './microvm-backend-config.js'
import type { MicroVMImage } from './microvm-image.js'

/** A working KVM reaches the initramfs in well under a second; this is generous for a loaded host. */
export const KVM_PROBE_TIMEOUT_MS = 20_000
const PROBE_MARKER = 'NAMZU_KVM_PROBE_OK'

export interface KvmProbe {
	readonly usable: boolean
	/** Why (for `doctor`): what was missing or what the probe boot showed. */
	readonly detail: string
}

let cached: Promise<KvmProbe> | undefined

export async function probeKvm(qemuBinary: string, image: MicroVMImage): Promise<KvmProbe> {
	try {
		await access('/dev/kvm', constants.R_OK | constants.W_OK)
	} catch {
		return { usable: false, detail: '/dev/kvm is missing or not read-writable' }
	}
	const dir = await mkdtemp(join(tmpdir(), 'namzu-kvm-probe-'))
	const consoleLog = join(dir, 'console.log')
	try {
		const child = spawn(
			'setpriv',
			[
				'--pdeathsig',
				'KILL',
				'--',
				qemuBinary,
				...['-M', 'pc', '-accel', 'kvm', '-cpu', 'host', '-m', '128', '-nodefaults'],
				...['-no-user-config', '-no-reboot', '-display', 'none', '-serial', `file:${consoleLog}`],
				...['-kernel', image.kernel, '-initrd', image.initramfs],
				...['-append', 'console=ttyS0 panic=-1 quiet namzu.probe'],
			],
			{ stdio: 'ignore' },
		)
		const exited = new Promise<void>((resolve) => {
			child.once('exit', () => resolve())
			child.once('error', () => resolve())
		})
		const timer = setTimeout(() => child.kill('SIGKILL'), KVM_PROBE_TIMEOUT_MS)
		await exited
		clearTimeout(timer)
		const console = await readFile(consoleLog, 'utf8').catch(() => '')
		return console.includes(PROBE_MARKER)
			? { usable: true, detail: 'a stock guest kernel boots under KVM' }
			: {
					usable: false,
					detail: `a stock guest kernel did not reach its initramfs under KVM within ${KVM_PROBE_TIMEOUT_MS} ms (a PVM host's KVM, for one)`,
				}
	} finally {
		await rm(dir, { recursive: true, force: true })
	}
}

/** The cached probe of this process. */
export function cachedKvmProbe(qemuBinary: string, image: MicroVMImage): Promise<KvmProbe> {
	cached ??= probeKvm(qemuBinary, image)
	return cached
}

export async function resolveQemuAccel(
	config: ResolvedMicroVMConfig,
	image: MicroVMImage,
	signal: AbortSignal,
): Promise<'kvm' | 'tcg'> {
	if (config.accel !== 'auto') return config.accel
	signal.throwIfAborted()
	return (await cachedKvmProbe(config.qemuBinary, image)).usable ? 'kvm' : 'tcg'
}

/**
 * Under TCG every guest instruction is emulated: on a loaded host a reserve round trip into a
 * just-restored guest went past the transport's 2 s default, which a caller would see as a
 * retryable control timeout on an otherwise healthy sandbox.
 */
export const TCG_CONTROL_REQUEST_TIMEOUT_MS = 15_000

/** The transport's control-request bound for a guest under `accel` (the default under KVM). */
export function controlBoundFor(accel: 'kvm' | 'tcg'): { controlRequestTimeoutMs?: number } {
	return accel === 'tcg' ? { controlRequestTimeoutMs: TCG_CONTROL_REQUEST_TIMEOUT_MS } : {}
}
