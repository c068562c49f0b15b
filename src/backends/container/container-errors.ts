/** The container tier's own refusals. Every other failure is the machine layer's. */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'

/** A `ContainerSandboxLayout` that `resolveLayout` (or the tier) refuses, with every reason found. */
export class ContainerSandboxLayoutValidationError extends SandboxError<'layout-invalid'> {
	override readonly name = 'ContainerSandboxLayoutValidationError'
	readonly reasons: readonly string[]

	constructor(reasons: readonly string[], options: SandboxErrorOptions = {}) {
		super(`invalid container sandbox layout: ${reasons.join('; ')}`, 'layout-invalid', options)
		this.reasons = [...reasons]
	}

	/** The error as plain data, every reason included (for logs and wire reports). */
	toJSON(): { name: string; message: string; reason: string; reasons: string[] } {
		return {
			name: this.name,
			message: this.message,
			reason: this.reason,
			reasons: [...this.reasons],
		}
	}
}

/** The OCI runtime asked for cannot run containers on this host (missing, or broken here). */
export class ContainerRuntimeUnavailableError extends SandboxError<'runtime-unavailable'> {
	override readonly name = 'ContainerRuntimeUnavailableError'
	readonly runtime: string
	readonly path: string
	/** What to do about it, one line. */
	readonly fix: string

	constructor(
		runtime: string,
		path: string,
		detail: string,
		fix: string,
		options: SandboxErrorOptions = {},
	) {
		super(
			`container runtime ${runtime} (${path}) is unusable: ${detail}; ${fix}`,
			'runtime-unavailable',
			options,
		)
		this.runtime = runtime
		this.path = path
		this.fix = fix
	}
}

/** A runtime command (`create`, `start`, `delete`) that failed, with the last of its stderr. */
export class ContainerRuntimeCommandError extends SandboxError<'runtime-command-failed'> {
	override readonly name = 'ContainerRuntimeCommandError'
	readonly runtime: string
	/** The runtime's subcommand: `create`, `start`, `delete`, `state`. */
	readonly command: string
	readonly exitCode?: number
	readonly stderrTail: string

	constructor(
		runtime: string,
		command: string,
		fields: { readonly exitCode?: number | null; readonly stderrTail: string },
		options: SandboxErrorOptions = {},
	) {
		const tail = fields.stderrTail.trim()
		super(
			`${runtime} ${command} failed${typeof fields.exitCode === 'number' ? ` (exit ${fields.exitCode})` : ''}${tail === '' ? '' : `: ${tail}`}`,
			'runtime-command-failed',
			options,
		)
		this.runtime = runtime
		this.command = command
		if (typeof fields.exitCode === 'number') this.exitCode = fields.exitCode
		this.stderrTail = fields.stderrTail
	}
}

/** An egress kind the container tier does not enforce on this runtime: refused, never widened. */
export class ContainerEgressUnsupportedError extends SandboxError<'egress-unsupported'> {
	override readonly name = 'ContainerEgressUnsupportedError'
	readonly egressKind: string
	readonly runtime: string

	constructor(egressKind: string, runtime: string, why: string) {
		super(
			`egress kind '${egressKind}' is not supported by the container tier on ${runtime}: ${why}; use 'deny-all', or runc / crun for '${egressKind}'`,
			'egress-unsupported',
		)
		this.egressKind = egressKind
		this.runtime = runtime
	}
}

/** `create()` after `close()`. */
export class ContainerProviderClosedError extends SandboxError<'provider-closed'> {
	override readonly name = 'ContainerProviderClosedError'

	constructor() {
		super('the container sandbox provider is closed; create() refused', 'provider-closed')
	}
}
