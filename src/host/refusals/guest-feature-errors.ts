/**
 * "The guest lacks feature X": one class, `GuestFeatureUnsupportedError { feature, operation }`,
 * raised before anything is dialed by the one feature check (`../transport/guest-features.ts`), so
 * an older guest image is refused by name rather than read as "nothing to do". The features the
 * package has always named a class for keep it, as a subclass: `instanceof` works with either, and
 * `reason` is `<feature>-unsupported` for all of them.
 */
import { SandboxError } from '../../contract/errors.js'
import {
	type AgentFeature,
	EXECUTION_ATTACH_FEATURE,
	FLUSH_FEATURE,
	QUIESCE_FEATURE,
	READ_FILE_STREAM_FEATURE,
	SESSIONS_FEATURE,
} from '../../wire/features.js'
import type { AgentRefusalCode } from '../../wire/refusals.js'

/** The guest's `healthz` does not advertise `feature`, which `operation` needs. Nothing was sent. */
export class GuestFeatureUnsupportedError extends SandboxError<`${AgentFeature}-unsupported`> {
	override readonly name: string = 'GuestFeatureUnsupportedError'
	readonly feature: AgentFeature
	/** The call that needed it (`startDetached`, `readFile`, `quiesce`, …). */
	readonly operation: string

	constructor(feature: AgentFeature, operation: string, message?: string) {
		super(
			message ??
				`${operation}: the guest agent does not advertise '${feature}'; rebuild the guest image from this release`,
			`${feature}-unsupported`,
		)
		this.feature = feature
		this.operation = operation
	}
}

/** A session verb against a guest that does not advertise `sessions`. */
export class SessionsUnsupportedError extends GuestFeatureUnsupportedError {
	override readonly name = 'SessionsUnsupportedError'
	declare readonly reason: `${typeof SESSIONS_FEATURE}-unsupported`

	constructor(operation: string) {
		super(
			SESSIONS_FEATURE,
			operation,
			`${operation}: the guest agent does not advertise 'sessions'; redeploy the guest image to get persistent terminals and detached programs`,
		)
	}
}

/** A detachable `exec`, `attachExecution` or `cancelExecution` against a guest without `execution-attach`. */
export class ExecutionAttachUnsupportedError extends GuestFeatureUnsupportedError {
	override readonly name = 'ExecutionAttachUnsupportedError'
	declare readonly reason: `${typeof EXECUTION_ATTACH_FEATURE}-unsupported`

	constructor(operation: string) {
		super(
			EXECUTION_ATTACH_FEATURE,
			operation,
			`${operation}: the guest agent does not advertise execution-attach; redeploy the guest image from this release`,
		)
	}
}

/** A ranged read or a streamed read against a guest that does not advertise `read-file-stream`. */
export class AgentReadFileStreamUnsupportedError extends GuestFeatureUnsupportedError {
	override readonly name = 'AgentReadFileStreamUnsupportedError'
	declare readonly reason: `${typeof READ_FILE_STREAM_FEATURE}-unsupported`

	constructor(operation: string) {
		super(
			READ_FILE_STREAM_FEATURE,
			operation,
			`${operation}: the guest agent does not advertise '${READ_FILE_STREAM_FEATURE}' (ranged and streamed reads); rebuild the guest image`,
		)
	}
}

/** `quiesce()` against a guest whose agent predates the op (not advertised, or `unknown_op`). */
export class QuiesceUnsupportedError extends GuestFeatureUnsupportedError {
	override readonly name = 'QuiesceUnsupportedError'
	declare readonly reason: `${typeof QUIESCE_FEATURE}-unsupported`

	constructor(operation = 'quiesce') {
		super(
			QUIESCE_FEATURE,
			operation,
			`quiesce refused: the guest agent does not advertise '${QUIESCE_FEATURE}'; rebuild the guest image from this release`,
		)
	}
}

/**
 * `flush()` against a guest that cannot flush: it does not advertise `flush`, or it answered
 * `flush_unsupported` / `flush_unsupported_platform` (then `guestCode`).
 */
export class FlushUnsupportedError extends GuestFeatureUnsupportedError {
	override readonly name = 'FlushUnsupportedError'
	declare readonly reason: `${typeof FLUSH_FEATURE}-unsupported`
	/** The guest's refusal code, when the guest itself answered that it cannot flush. */
	readonly guestCode?: AgentRefusalCode

	constructor(
		detail: string,
		options: { readonly operation?: string; readonly guestCode?: AgentRefusalCode } = {},
	) {
		super(FLUSH_FEATURE, options.operation ?? 'flush', `flush refused: ${detail}`)
		if (options.guestCode !== undefined) this.guestCode = options.guestCode
	}
}

/** The named subclass for a feature that has one. */
const FEATURE_ERRORS: {
	readonly [F in AgentFeature]?: (operation: string) => GuestFeatureUnsupportedError
} = {
	[SESSIONS_FEATURE]: (operation) => new SessionsUnsupportedError(operation),
	[EXECUTION_ATTACH_FEATURE]: (operation) => new ExecutionAttachUnsupportedError(operation),
	[READ_FILE_STREAM_FEATURE]: (operation) => new AgentReadFileStreamUnsupportedError(operation),
	[QUIESCE_FEATURE]: (operation) => new QuiesceUnsupportedError(operation),
	[FLUSH_FEATURE]: (operation) =>
		new FlushUnsupportedError(`the guest agent does not advertise '${FLUSH_FEATURE}'`, {
			operation,
		}),
}

/** The error for a guest that lacks `feature`: its named subclass, else the class itself. */
export function guestFeatureUnsupported(
	feature: AgentFeature,
	operation: string,
): GuestFeatureUnsupportedError {
	return (
		FEATURE_ERRORS[feature]?.(operation) ?? new GuestFeatureUnsupportedError(feature, operation)
	)
}
