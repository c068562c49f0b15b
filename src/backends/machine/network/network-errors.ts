/**
 * Refusals of a sandbox's network on this machine: `allow-all` needs user-mode networking and a
 * firewall inside the sandbox's namespace, and never falls back to sharing the host's network.
 */
import { SandboxError, type SandboxErrorOptions } from '../../../contract/errors.js'
import { debianInstallCommand, missingProgramsLine } from '../launch/install-hint.js'

/** A host program or device that `egress: 'allow-all'` needs and this host lacks. */
export interface MissingNetworkTool {
	/** `slirp4netns`, `nft`, `nsenter`, or the `tun` device slirp4netns opens. */
	readonly tool: string
	/** The exact path that was looked for. */
	readonly path: string
	/** How to fix it, e.g. `apt-get install -y slirp4netns, or point backend.tools.slirp4netns at it`. */
	readonly fix: string
	/** The Debian package that provides it (absent for the `tun` device). */
	readonly debianPackage?: string
}

/** One fix for all of `missing`: a single `apt-get install` for the packages, then the rest. */
export function networkToolsFix(missing: readonly MissingNetworkTool[]): string {
	const packages = [
		...new Set(missing.flatMap((entry) => (entry.debianPackage ? [entry.debianPackage] : []))),
	]
	const install = packages.length === 0 ? [] : [debianInstallCommand(packages.join(' '))]
	const rest = missing.filter((entry) => entry.debianPackage === undefined)
	return [...install, ...rest.map((entry) => entry.fix)].join('; ')
}

/** `needs slirp4netns at /usr/bin/slirp4netns: apt-get install -y slirp4netns` (CLI and doctor). */
export function missingNetworkToolsLine(missing: readonly MissingNetworkTool[]): string {
	const programs = missing.map((entry) => ({ program: entry.tool, path: entry.path }))
	return missingProgramsLine(programs, networkToolsFix(missing))
}

/** `egress: allow-all` was asked for but a tool it needs is not usable on this host. */
export class LocalNetworkUnavailableError extends SandboxError<'network-unavailable'> {
	override readonly name = 'LocalNetworkUnavailableError'
	readonly missing: readonly MissingNetworkTool[]
	/** What to run for all of them at once (`networkToolsFix`). */
	readonly fix: string

	constructor(missing: readonly MissingNetworkTool[]) {
		const tools = missing.map((entry) => `${entry.tool} at ${entry.path} (${entry.fix})`).join('; ')
		super(
			`egress allow-all cannot be set up on this host: ${tools}; or use egress deny-all, which needs none of them`,
			'network-unavailable',
		)
		this.missing = missing
		this.fix = networkToolsFix(missing)
	}
}

/**
 * slirp4netns or the sandbox's firewall (allow-all), or the capture route or helper (`static` /
 * `resolver`), could not be set up; nothing was left running.
 */
export class LocalNetworkSetupError extends SandboxError<'network-setup-failed'> {
	override readonly name = 'LocalNetworkSetupError'
	readonly sandboxId: string
	/** Which step failed. */
	readonly step:
		| 'namespace'
		| 'slirp4netns'
		| 'firewall'
		| 'capture-route'
		| 'capture-helper'
		| 'egress-proxy'
	/** What the failing tool wrote to stderr (last lines). */
	readonly stderrTail: string

	constructor(
		sandboxId: string,
		step: LocalNetworkSetupError['step'],
		detail: string,
		stderrTail: string,
		options: SandboxErrorOptions = {},
	) {
		const tail = stderrTail.trim()
		super(
			`network of local sandbox ${sandboxId} could not be set up (${step}): ${detail}${tail === '' ? '' : `\n--- stderr (tail) ---\n${tail}`}`,
			'network-setup-failed',
			options,
		)
		this.sandboxId = sandboxId
		this.step = step
		this.stderrTail = stderrTail
	}
}
