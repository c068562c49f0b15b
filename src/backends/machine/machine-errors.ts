/**
 * Refusals of the machine layer, raised by whichever tier runs guests as processes on this host
 * (bubblewrap, containers): limits no controller enforces, a start that failed, a teardown that
 * left something, a path option, the uid range, the shared state entries, a busy workspace, a
 * host program. The names are the local tier's, which raised them first; they are public and kept.
 * Each is its own class with `name` set and machine-readable fields; no message carries an
 * environment value or a token.
 */
import { describeReceived } from '../../contract/argument-validators.js'
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import { debianInstallCommand } from './launch/install-hint.js'

/**
 * An egress kind this tier cannot enforce for this sandbox: refused rather than silently widened or
 * narrowed. `static` and `resolver` need the egress proxy in this host process and bubblewrap's
 * network namespace, so a kept-alive sandbox or `isolation: 'none'` cannot have them.
 */
export class LocalEgressUnsupportedError extends SandboxError<'egress-unsupported'> {
	override readonly name = 'LocalEgressUnsupportedError'
	readonly egressKind: string
	/** What the kind cannot be combined with (`a kept-alive sandbox`, `isolation 'none'`), if that is why. */
	readonly combination?: string

	constructor(egressKind: string, combination?: string) {
		super(
			combination === undefined
				? `egress kind '${egressKind}' is not supported by the local tier; use 'deny-all', 'allow-all', 'static' or 'resolver'`
				: `egress kind '${egressKind}' is not supported for ${combination} on the local tier (its egress proxy lives in the host process and needs bubblewrap's network namespace)`,
			'egress-unsupported',
		)
		this.egressKind = egressKind
		if (combination !== undefined) this.combination = combination
	}
}

/** Limits were asked for but no cgroup controller on this host can enforce them. */
export class CgroupLimitsUnavailableError extends SandboxError<'limits-unavailable'> {
	override readonly name = 'CgroupLimitsUnavailableError'
	/** The controllers that were needed and not found (`memory`, `pids`). */
	readonly controllers: readonly string[]

	constructor(controllers: readonly string[], detail: string, options: SandboxErrorOptions = {}) {
		super(
			`cannot enforce sandbox limits: no usable cgroup controller for ${controllers.join(', ')} (${detail})`,
			'limits-unavailable',
			options,
		)
		this.controllers = controllers
	}
}

/** The agent did not come up: it exited, never answered, or the launcher failed. */
export class LocalSandboxStartError extends SandboxError<'start-failed'> {
	override readonly name = 'LocalSandboxStartError'
	readonly sandboxId: string
	/** Last lines the agent (or bwrap) wrote to stderr, with caller-supplied env values redacted. */
	readonly stderrTail: string
	readonly exitCode?: number
	readonly signal?: string

	constructor(
		sandboxId: string,
		detail: string,
		fields: { stderrTail: string; exitCode?: number | null; signal?: string | null },
		options: SandboxErrorOptions = {},
	) {
		const tail = fields.stderrTail.trim()
		super(
			`local sandbox ${sandboxId} failed to start: ${detail}${tail === '' ? '' : `\n--- stderr (tail) ---\n${tail}`}`,
			'start-failed',
			options,
		)
		this.sandboxId = sandboxId
		this.stderrTail = fields.stderrTail
		if (typeof fields.exitCode === 'number') this.exitCode = fields.exitCode
		if (typeof fields.signal === 'string') this.signal = fields.signal
	}
}

/** Teardown could not remove something it created (a cgroup, the state directory). */
export class LocalSandboxCleanupError extends SandboxError<'cleanup-failed'> {
	override readonly name = 'LocalSandboxCleanupError'
	/** Host paths still present. */
	readonly leftovers: readonly string[]

	constructor(leftovers: readonly string[], options: SandboxErrorOptions = {}) {
		super(`local sandbox teardown left behind: ${leftovers.join(', ')}`, 'cleanup-failed', {
			retryable: true,
			...options,
		})
		this.leftovers = leftovers
	}

	/** One error for a teardown's failures (none: undefined), every leftover they name gathered. */
	static ofFailures(failures: readonly unknown[]): LocalSandboxCleanupError | undefined {
		if (failures.length === 0) return undefined
		const leftovers = failures.flatMap((failure) =>
			failure instanceof LocalSandboxCleanupError ? [...failure.leftovers] : [],
		)
		return new LocalSandboxCleanupError(leftovers, { cause: failures[0] })
	}
}

/** Why a `readOnlyPaths` / `hiddenPaths` entry was refused. */
export type LocalPathOptionRefusal =
	| 'not-a-list'
	| 'not-a-string'
	| 'not-absolute'
	| 'dot-dot'
	| 'nul'
	| 'root'
	| 'missing'
	| 'state-dir'
	| 'workspace'

/**
 * A `readOnlyPaths` or `hiddenPaths` entry the local tier will not use. `parameter` names the
 * option and the index (`readOnlyPaths[2]`); nothing was started.
 */
export class LocalPathOptionError extends SandboxError<'invalid-path-option'> {
	override readonly name = 'LocalPathOptionError'
	readonly parameter: string
	readonly refusal: LocalPathOptionRefusal
	/** The value as given (described in the message the way the contract's validators do). */
	readonly value: unknown

	constructor(parameter: string, refusal: LocalPathOptionRefusal, value: unknown, detail: string) {
		super(`${parameter}: ${detail}, got ${describeReceived(value)}`, 'invalid-path-option')
		this.parameter = parameter
		this.refusal = refusal
		this.value = value
	}
}

/** The sandbox uid range is used up: every uid in it is locked by a live (or crashed) sandbox. */
export class LocalSandboxUidsExhaustedError extends SandboxError<'uids-exhausted'> {
	override readonly name = 'LocalSandboxUidsExhaustedError'
	readonly first: number
	readonly count: number

	constructor(first: number, count: number) {
		super(
			`no free sandbox uid in ${first}..${first + count - 1}: every one is locked under the state directory (destroy sandboxes, run gc, or widen backend.sandboxUidRange)`,
			'uids-exhausted',
			{ retryable: true },
		)
		this.first = first
		this.count = count
	}
}

/**
 * A shared entry of the state directory (the runtime cache, the claim locks) is not ours alone:
 * wrong owner, writable by others, or not what it should be. Somebody else may have planted it.
 */
export class LocalStateEntryUnsafeError extends SandboxError<'state-entry-unsafe'> {
	override readonly name = 'LocalStateEntryUnsafeError'
	readonly path: string

	constructor(path: string, detail: string, options: SandboxErrorOptions = {}) {
		super(
			`${path} in the sandbox state directory is not safe to use: ${detail}`,
			'state-entry-unsafe',
			options,
		)
		this.path = path
	}
}

/** A caller-supplied workspace is already handed to another sandbox's uid. */
export class LocalWorkspaceBusyError extends SandboxError<'workspace-busy'> {
	override readonly name = 'LocalWorkspaceBusyError'
	readonly workspace: string

	constructor(workspace: string, detail: string) {
		super(
			`workingDirectory ${workspace} is in use by another sandbox (${detail})`,
			'workspace-busy',
			{
				retryable: true,
			},
		)
		this.workspace = workspace
	}
}

/**
 * A host program the hardened launch needs is not usable: `setpriv` (util-linux), `mount` and
 * `umount` (Debian's `mount` package), GNU `find` (findutils), `chown`, `chmod` (coreutils).
 */
export class LocalHelperUnavailableError extends SandboxError<'helper-unavailable'> {
	override readonly name = 'LocalHelperUnavailableError'
	readonly helperPath: string

	constructor(helperPath: string, purpose: string, options: SandboxErrorOptions = {}) {
		super(
			`${helperPath} is needed to ${purpose} but is not executable (${debianInstallCommand('util-linux mount coreutils findutils')})`,
			'helper-unavailable',
			options,
		)
		this.helperPath = helperPath
	}
}

/** A host program the launch or the teardown ran (`chown`, `mount`, …) exited non-zero. */
export class LocalHostToolError extends SandboxError<'host-tool-failed'> {
	override readonly name = 'LocalHostToolError'
	/** The program's fixed path. */
	readonly toolPath: string
	readonly exitCode?: number
	readonly signal?: string
	/** The first bytes of what it wrote to stderr. */
	readonly stderrTail: string

	constructor(
		toolPath: string,
		args: readonly string[],
		run: {
			readonly code: number | null
			readonly signal: string | null
			readonly stderr: string
		},
	) {
		super(
			`${toolPath} ${args.join(' ')} failed (${run.code ?? run.signal}): ${run.stderr}`,
			'host-tool-failed',
		)
		this.toolPath = toolPath
		if (run.code !== null) this.exitCode = run.code
		if (run.signal !== null) this.signal = run.signal
		this.stderrTail = run.stderr
	}
}

/**
 * The host's architecture has no syscall table in the project's seccomp generator, so no sandbox
 * here could get its filter: refused when the provider is constructed rather than run unfiltered.
 */
export class SeccompUnsupportedArchError extends SandboxError<'seccomp-unsupported-arch'> {
	override readonly name = 'SeccompUnsupportedArchError'
	/** Node's name for the host's architecture (`process.arch`). */
	readonly arch: string
	readonly supported: readonly string[]

	constructor(arch: string, supported: readonly string[]) {
		super(
			`no seccomp filter for architecture '${arch}' (supported: ${supported.join(', ')}); run the local and container tiers on one of those, or use another tier`,
			'seccomp-unsupported-arch',
		)
		this.arch = arch
		this.supported = supported
	}
}
