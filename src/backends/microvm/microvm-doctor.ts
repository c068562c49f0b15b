/**
 * What `doctor` says of the microVM tier: QEMU present, the `--vm` image built, which
 * accelerator a sandbox gets (KVM only when the probe boot reached the initramfs; TCG otherwise),
 * which egress kinds it serves here (the host tools each needs), and the default state
 * directory's warm-start snapshot cache (where, how many entries and bytes, and whether
 * `startFromSnapshot` can work here).
 */
import { spawnSync } from 'node:child_process'
import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { FLOCK_PATH } from '../machine/claims/file-lock.js'
import { missingNetworkToolsLine } from '../machine/network/network-errors.js'
import { snapshotCacheUsage } from '../machine/snapshots/snapshot-cache.js'
import { resolveStateBase } from '../machine/workspace/sandbox-directories.js'
import { missingOpenNetworkTools } from './guest-open-network.js'
import { probeKvm } from './kvm-probe.js'
import { MicroVMImageMissingError } from './microvm-errors.js'
import { locateMicroVMImage } from './microvm-image.js'
import { RELAY_PERL } from './stream-relay.js'

export interface MicroVMReport {
	readonly qemu: { readonly ok: boolean; readonly detail: string }
	readonly image: { readonly ok: boolean; readonly detail: string }
	/** Undefined when there was nothing to probe with (no QEMU or no image). */
	readonly accel?: { readonly accel: 'kvm' | 'tcg'; readonly detail: string }
	/** The egress kinds a guest can be created with here, and each refused with why. */
	readonly egress: MicroVMEgressSupport
	/** The state directory's warm-start snapshots, and whether `startFromSnapshot` works here. */
	readonly snapshotCache?: MicroVMSnapshotCacheReport
}

export interface MicroVMSnapshotCacheReport {
	readonly dir: string
	readonly entries: number
	/** Disk the entries take (allocated blocks). */
	readonly bytes: number
	/** Whether a warm start can run here, and if not what it needs. */
	readonly warmStart: { readonly usable: boolean; readonly detail: string }
}

async function executableAt(path: string): Promise<boolean> {
	return access(path, constants.X_OK).then(
		() => true,
		() => false,
	)
}

/**
 * The snapshot cache of `stateDir` (the tier's default: the OS temporary directory). A warm start
 * needs what a boot needs (QEMU, the image) and `flock(1)` for the cache's build lock.
 */
export async function describeMicroVMSnapshotCache(
	ready: { readonly qemu: boolean; readonly image: boolean },
	stateDir: string = tmpdir(),
): Promise<MicroVMSnapshotCacheReport> {
	const usage = await snapshotCacheUsage(await resolveStateBase(stateDir))
	const missing = [
		...(ready.qemu ? [] : ['qemu']),
		...(ready.image ? [] : ['the --vm guest image']),
		...((await executableAt(FLOCK_PATH)) ? [] : [`${FLOCK_PATH} (apt-get install -y util-linux)`]),
	]
	return {
		...usage,
		warmStart:
			missing.length === 0
				? { usable: true, detail: 'usable here (startFromSnapshot: true)' }
				: { usable: false, detail: `not usable here: needs ${missing.join(', ')}` },
	}
}

/** Bytes as doctor prints them (pure). */
export function formatBytes(bytes: number): string {
	const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
	let value = bytes
	let unit = 0
	while (value >= 1024 && unit < units.length - 1) {
		value /= 1024
		unit += 1
	}
	return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`
}

export interface MicroVMEgressSupport {
	readonly served: readonly string[]
	readonly refused: readonly { readonly kind: string; readonly why: string }[]
}

/** `deny-all` needs nothing; `static` / `resolver` the relay's perl; `allow-all` the network tools. */
export async function describeMicroVMEgress(): Promise<MicroVMEgressSupport> {
	const served = ['deny-all']
	const refused: { kind: string; why: string }[] = []
	const perl = await executableAt(RELAY_PERL)
	for (const kind of ['static', 'resolver']) {
		if (perl) served.push(kind)
		else refused.push({ kind, why: `needs ${RELAY_PERL}: apt-get install -y perl-base` })
	}
	const missing = await missingOpenNetworkTools()
	if (missing.length === 0) served.push('allow-all')
	else refused.push({ kind: 'allow-all', why: missingNetworkToolsLine(missing) })
	return { served, refused }
}

export async function describeMicroVM(
	qemuBinary = 'qemu-system-x86_64',
	stateDir: string = tmpdir(),
): Promise<MicroVMReport> {
	const version = spawnSync(qemuBinary, ['--version'], { encoding: 'utf8' })
	const qemu =
		version.status === 0
			? { ok: true, detail: (version.stdout.split('\n')[0] ?? '').trim() }
			: { ok: false, detail: `${qemuBinary} not found: apt-get install -y qemu-system-x86` }
	let image: MicroVMReport['image']
	try {
		const found = await locateMicroVMImage()
		image = { ok: true, detail: found.dir }
	} catch (error) {
		if (!(error instanceof MicroVMImageMissingError)) throw error
		image = { ok: false, detail: 'not built: npx --no-install namzu-sandbox image build --vm' }
	}
	const egress = await describeMicroVMEgress()
	const snapshotCache = await describeMicroVMSnapshotCache(
		{ qemu: qemu.ok, image: image.ok },
		stateDir,
	)
	if (!qemu.ok || !image.ok) return { qemu, image, egress, snapshotCache }
	const probe = await probeKvm(qemuBinary, await locateMicroVMImage())
	return {
		qemu,
		image,
		egress,
		snapshotCache,
		accel: probe.usable
			? { accel: 'kvm', detail: probe.detail }
			: { accel: 'tcg', detail: `TCG emulation (10-50x slower): ${probe.detail}` },
	}
}

/** The report as `doctor` prints it (pure). */
export function formatMicroVMReport(report: MicroVMReport): string {
	const mark = (ok: boolean) => (ok ? 'ok  ' : 'NO  ')
	const lines = [
		"microVM tier (backend.tier 'microvm', service 'qemu'):",
		`  ${mark(report.qemu.ok)} qemu              ${report.qemu.detail}`,
		`  ${mark(report.image.ok)} guest image       ${report.image.detail}`,
	]
	if (report.accel) {
		lines.push(`  ok   accelerator       ${report.accel.accel}: ${report.accel.detail}`)
	}
	lines.push(`  ok   egress            ${report.egress.served.join(', ')}`)
	for (const { kind, why } of report.egress.refused) {
		lines.push(`  NO   egress ${kind.padEnd(10)} ${why}`)
	}
	const cache = report.snapshotCache
	if (cache) {
		const held = `${cache.entries} ${cache.entries === 1 ? 'entry' : 'entries'}, ${formatBytes(cache.bytes)}`
		lines.push(
			`  ${mark(cache.warmStart.usable)} snapshot cache    ${cache.dir}: ${held}; warm start ${cache.warmStart.detail}`,
		)
	}
	return `${lines.join('\n')}\n`
}
