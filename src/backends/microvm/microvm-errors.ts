/**
 * Refusals of the microVM tier: no guest image built, a VMM the host cannot run, an egress kind
 * this tier does not enforce, a closed provider, and a Firecracker API fault. Each names what to
 * do; none carries a token or an environment value.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'

/** The kernel, initramfs or root disk the VMM boots is missing: build it first. */
export class MicroVMImageMissingError extends SandboxError<'image-missing'> {
	override readonly name = 'MicroVMImageMissingError'
	/** Where the image was looked for. */
	readonly imageDir: string
	/** The file that was not there. */
	readonly missing: string

	constructor(imageDir: string, missing: string) {
		super(
			`no microVM guest image at ${imageDir} (${missing} is missing): run \`npx --no-install namzu-sandbox image build --vm\` or set imageDir`,
			'image-missing',
		)
		this.imageDir = imageDir
		this.missing = missing
	}
}

/**
 * An egress kind the microVM tier does not enforce: refused, never silently widened. `service:
 * 'qemu'` serves every kind today, so nothing raises it there; it stays the tier's named refusal
 * for a kind a VMM driver cannot enforce.
 */
export class MicroVMEgressUnsupportedError extends SandboxError<'egress-unsupported'> {
	override readonly name = 'MicroVMEgressUnsupportedError'
	readonly egressKind: string

	constructor(egressKind: string) {
		super(
			`egress kind '${egressKind}' is not supported by the microVM tier yet; use 'deny-all', or 'static' / 'resolver' to allow named hosts through the host's egress proxy`,
			'egress-unsupported',
		)
		this.egressKind = egressKind
	}
}

/** A VMM this host cannot run (`firecracker` has no binary here; the API driver is tested alone). */
export class MicroVMServiceUnavailableError extends SandboxError<'service-unavailable'> {
	override readonly name = 'MicroVMServiceUnavailableError'
	readonly service: string

	constructor(service: string, detail: string, options: SandboxErrorOptions = {}) {
		super(`microVM service '${service}' cannot run here: ${detail}`, 'service-unavailable', options)
		this.service = service
	}
}

/** `create()` after `close()`. */
export class MicroVMProviderClosedError extends SandboxError<'provider-closed'> {
	override readonly name = 'MicroVMProviderClosedError'

	constructor() {
		super('the microVM provider is closed: create a new one', 'provider-closed')
	}
}

/** Firecracker answered an API request with a fault (`{ fault_message }`) or an unexpected status. */
export class FirecrackerApiError extends SandboxError<'firecracker-api-fault'> {
	override readonly name = 'FirecrackerApiError'
	readonly method: string
	readonly path: string
	readonly statusCode: number
	/** Firecracker's `fault_message`, when the body carried one. */
	readonly faultMessage?: string

	constructor(
		request: { readonly method: string; readonly path: string },
		statusCode: number,
		faultMessage: string | undefined,
		options: SandboxErrorOptions = {},
	) {
		super(
			`firecracker ${request.method} ${request.path} answered ${statusCode}${faultMessage === undefined ? '' : `: ${faultMessage.slice(0, 300)}`}; check the VM configuration it names`,
			'firecracker-api-fault',
			options,
		)
		this.method = request.method
		this.path = request.path
		this.statusCode = statusCode
		if (faultMessage !== undefined) this.faultMessage = faultMessage
	}
}

/** QEMU's monitor refused a command, closed, or was not reachable. */
export class QemuMonitorError extends SandboxError<'qemu-monitor-failed'> {
	override readonly name = 'QemuMonitorError'
	/** The QMP command, or `connect`. */
	readonly command: string

	constructor(command: string, detail: string, options: SandboxErrorOptions = {}) {
		super(
			`QEMU monitor: ${command} failed (${detail.slice(0, 300)}); the guest's VMM may have exited — check its console log`,
			'qemu-monitor-failed',
			options,
		)
		this.command = command
	}
}

/**
 * A warm-start snapshot's directory holds no usable VM record (damaged, or written by another
 * version): the create that met it boots instead and the snapshot is discarded, so the next start
 * rebuilds it. Seen in `onGuestStart`'s `restore-failed` event, never thrown from `create()`.
 */
export class MicroVMSnapshotDamagedError extends SandboxError<'snapshot-damaged'> {
	override readonly name = 'MicroVMSnapshotDamagedError'
	/** The snapshot's directory. */
	readonly snapshotDir: string

	constructor(snapshotDir: string) {
		super(
			`the warm-start snapshot at ${snapshotDir} has no usable VM record; it is discarded and rebuilt by the next start`,
			'snapshot-damaged',
		)
		this.snapshotDir = snapshotDir
	}
}

/**
 * A guest restored from a memory snapshot could not reseed its kernel's random generator (its
 * image lacks the root reseed helper, or the helper failed). Refused rather than handed out: its
 * /dev/urandom would repeat the bytes of every other guest restored from the same snapshot. A warm
 * start meets it as `restore-failed` and boots instead; a fork fails with it.
 */
export class MicroVMEntropyNotRenewedError extends SandboxError<'entropy-not-renewed'> {
	override readonly name = 'MicroVMEntropyNotRenewedError'

	constructor() {
		super(
			'the restored guest could not reseed its kernel random generator, so it would share random bytes with other restores of the same snapshot; rebuild the guest image (`npx --no-install namzu-sandbox image build --vm`) and retry',
			'entropy-not-renewed',
		)
	}
}
