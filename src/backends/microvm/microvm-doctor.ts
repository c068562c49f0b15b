/**
 * What `doctor` says of the microVM tier: QEMU present, the `--vm` image built, which
 * accelerator a sandbox gets (KVM only when the probe boot reached the initramfs; TCG otherwise),
 * and which egress kinds it serves here (the host tools each needs).
 */
import { spawnSync } from 'node:child_process'
import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { missingNetworkToolsLine } from '../machine/network/network-errors.js'
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
}

export interface MicroVMEgressSupport {
	readonly served: readonly string[]
	readonly refused: readonly { readonly kind: string; readonly why: string }[]
}

/** `deny-all` needs nothing; `static` / `resolver` the relay's perl; `allow-all` the network tools. */
export async function describeMicroVMEgress(): Promise<MicroVMEgressSupport> {
	const served = ['deny-all']
	const refused: { kind: string; why: string }[] = []
	const perl = await access(RELAY_PERL, constants.X_OK).then(
		() => true,
		() => false,
	)
	for (const kind of ['static', 'resolver']) {
		if (perl) served.push(kind)
		else refused.push({ kind, why: `needs ${RELAY_PERL}: apt-get install -y perl-base` })
	}
	const missing = await missingOpenNetworkTools()
	if (missing.length === 0) served.push('allow-all')
	else refused.push({ kind: 'allow-all', why: missingNetworkToolsLine(missing) })
	return { served, refused }
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
	const egress = await describeMicroVMEgress()
	if (!qemu.ok || !image.ok) return { qemu, image, egress }
	const probe = await probeKvm(qemuBinary, await locateMicroVMImage())
	return {
		qemu,
		image,
		egress,
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
	return `${lines.join('\n')}\n`
}
