/**
 * Refusals of the local (bubblewrap) tier alone: bubblewrap itself, a closed provider, a kept-alive
 * sandbox not found or not possible, a state directory the sandbox uids cannot traverse. What the
 * machine layer raises for every tier is in `machine-errors.ts`. Each is its own class with `name`
 * set and machine-readable fields; no message carries an environment value or a token.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import { debianInstallCommand } from '../machine/launch/install-hint.js'

/** The configured bubblewrap binary is missing or not executable. Never searched on PATH. */
export class BubblewrapUnavailableError extends SandboxError<'bubblewrap-unavailable'> {
	override readonly name = 'BubblewrapUnavailableError'
	/** The exact path that was looked for. */
	readonly bwrapPath: string
	/** The command that installs it on Debian and Ubuntu (`sudo` only when not already root). */
	readonly fix: string

	constructor(bwrapPath: string, detail: string, options: SandboxErrorOptions = {}) {
		const fix = debianInstallCommand('bubblewrap')
		super(
			`bubblewrap is not usable at ${bwrapPath} (${detail}); install it with \`${fix}\`, point backend.bwrapPath at it, or opt out explicitly with isolation: 'none'`,
			'bubblewrap-unavailable',
			options,
		)
		this.bwrapPath = bwrapPath
		this.fix = fix
	}
}

/** `create()` after `close()`. */
export class LocalProviderClosedError extends SandboxError<'provider-closed'> {
	override readonly name = 'LocalProviderClosedError'

	constructor() {
		super('the local sandbox provider is closed; create() refused', 'provider-closed')
	}
}

/** Why `openLocalSandbox` found nothing to open. */
export type LocalSandboxNotFoundReason = 'invalid-id' | 'missing' | 'expired' | 'dead'

/**
 * `openLocalSandbox(id)` found no live kept-alive sandbox by that id: never created with
 * `keepAlive`, already destroyed, past its lifetime, or its processes are gone (the last two are
 * reaped on the way out).
 */
export class LocalSandboxNotFoundError extends SandboxError<'not-found'> {
	override readonly name = 'LocalSandboxNotFoundError'
	readonly sandboxId: string
	readonly state: LocalSandboxNotFoundReason

	constructor(sandboxId: string, state: LocalSandboxNotFoundReason) {
		const why: Record<LocalSandboxNotFoundReason, string> = {
			'invalid-id': 'is not a local sandbox id (12 hex digits)',
			missing: 'has no kept-alive record in this state directory',
			expired: 'outlived its keepAliveMs and was reaped',
			dead: 'is no longer running and was reaped',
		}
		super(`local sandbox ${JSON.stringify(sandboxId)} ${why[state]}`, 'not-found')
		this.sandboxId = sandboxId
		this.state = state
	}
}

/**
 * `keepAlive` was asked for but a coreutils program it needs is not usable: `timeout` (the lifetime
 * watchdog) or `tail` (the bounded keeper of the sandbox's stderr).
 */
export class LocalKeepAliveUnavailableError extends SandboxError<'keep-alive-unavailable'> {
	override readonly name = 'LocalKeepAliveUnavailableError'
	readonly timeoutPath: string
	/** The program that is not executable. */
	readonly missingPath: string

	constructor(timeoutPath: string, options: SandboxErrorOptions = {}, missingPath = timeoutPath) {
		const role =
			missingPath === timeoutPath
				? "to bound the sandbox's lifetime"
				: "to keep the sandbox's stderr log bounded"
		super(
			`keepAlive needs coreutils ${missingPath === timeoutPath ? 'timeout' : 'tail'} at ${missingPath} ${role}; it is not executable`,
			'keep-alive-unavailable',
			options,
		)
		this.timeoutPath = timeoutPath
		this.missingPath = missingPath
	}
}

/**
 * A host path the sandbox's own uid must traverse is closed to it (a directory on the way lacks
 * the search bit for others), and the tier cannot route around it (the state directory).
 */
export class LocalStateDirUnreachableError extends SandboxError<'state-dir-unreachable'> {
	override readonly name = 'LocalStateDirUnreachableError'
	readonly stateDir: string
	/** The first directory on the way that others cannot search. */
	readonly blockedAt: string

	constructor(stateDir: string, blockedAt: string) {
		super(
			`backend.stateDir ${stateDir}: the sandbox uids cannot traverse ${blockedAt} (no search permission for others); make it searchable (chmod o+x ${blockedAt}) or choose another state directory`,
			'state-dir-unreachable',
		)
		this.stateDir = stateDir
		this.blockedAt = blockedAt
	}
}
