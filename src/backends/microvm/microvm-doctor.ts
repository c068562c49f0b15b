/**
 * What `doctor` says of the microVM tier: QEMU present, the `--vm` image built, and which
 * accelerator a sandbox gets (KVM only when the probe boot reached the initramfs; TCG otherwise).
 */
import { spawnSync } from 'node:child_process'
import { probeKvm } from './kvm-probe.js'
import { MicroVMImageMissingError } from './microvm-errors.js'
import { locateMicroVMImage } from './microvm-image.js'

export interface MicroVMReport {
	readonly qemu: { readonly ok: boolean; readonly detail: string }
	readonly image: { readonly ok: boolean; readonly detail: string }
	/** Undefined when there was nothing to probe with (no QEMU or no image). */
	readonly accel?: { readonly accel: 'kvm' | 'tcg'; readonly detail: string }
}

export async function describeMicroVM(qemuBinary = 'qemu-system-x86_64'): Promise<MicroVMReport> {
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
	if (!qemu.ok || !image.ok) return { qemu, image }
	const probe = await probeKvm(qemuBinary, await locateMicroVMImage())
	return {
		qemu,
		image,
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
	return `${lines.join('\n')}\n`
}
