/**
 * The one table from a guest refusal to the error a caller sees. The refusal is first read into its
 * typed code (`wire/refusals.ts`, never its wording); what the code becomes depends on what the
 * host was doing — the verb: `path_escapes_workspace` from a file verb is `SandboxPathEscapeError`,
 * `agent_retiring` answering a reservation is `RemoteCancellationUnknownError`. A code the verb does
 * not name becomes the verb's `otherwise`, and failing that the generic `AgentOpRefusedError`;
 * `unauthorized` is `AgentUnauthorizedError` whatever the verb.
 */
import {
	SandboxArgumentError,
	SandboxFileError,
	SandboxPathEscapeError,
} from '../../contract/errors.js'
import { type PathLimitViolation, pathLimitExpectation } from '../../wire/path-limits.js'
import type { AGENT_OP, AgentOp } from '../../wire/protocol.js'
import { AGENT_REFUSAL, type AgentRefusalCode, type WireRefusal } from '../../wire/refusals.js'
import { FlushUnsupportedError, QuiesceUnsupportedError } from './guest-feature-errors.js'
import {
	AgentOpRefusedError,
	AgentUnauthorizedError,
	ExecutionCancelRefusedError,
	ExecutionNotAttachableError,
	FlushUnconfirmedError,
	ProcessInputRefusedError,
	QuiesceUnconfirmedError,
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteExecutionRefusedError,
	RemoteProtocolError,
	SessionRefusedError,
} from './refusal-errors.js'

/** What each verb knows about the request a refusal answered (`op` is the wire op). */
export interface RefusalContexts {
	/** `reserve-execution`, on the plain and the detachable path alike. */
	readonly reserve: { readonly op: typeof AGENT_OP.reserveExecution }
	/** `cancel-execution` by id: the codes named end the confirm attempts; any other is retried. */
	readonly cancel: {
		readonly op: typeof AGENT_OP.cancelExecution
		readonly executionId: string
	}
	/** An `error` event of `execute`. */
	readonly execute: { readonly op: typeof AGENT_OP.execute }
	/** An `error` event of `attach-execution`. */
	readonly attach: {
		readonly op: typeof AGENT_OP.attachExecution
		readonly executionId: string
	}
	/** `execution-input` / `signal-execution` from a background command's handle. */
	readonly process: {
		readonly op: AgentOp
		readonly operation: string
		readonly executionId: string
	}
	/** `readFile`, `readFileStream`, `writeFile`, `listFiles`. */
	readonly file: {
		/** A string: it may come back from a thrown `AgentOpRefusedError`, whose `op` is public. */
		readonly op: string
		readonly operation: string
		readonly path: string
		/** The argument of `operation` that named the path (`path`, `rootPath`). */
		readonly parameter: string
		/** The refusal as the transport threw it, kept as the cause. */
		readonly cause?: unknown
	}
	/** The session verbs. */
	readonly session: {
		readonly op: AgentOp
		readonly operation: string
		readonly sessionId: string
	}
	readonly quiesce: { readonly op: typeof AGENT_OP.quiesce }
	readonly flush: { readonly op: typeof AGENT_OP.flush }
	/** Any other op (terminals, tcp, healthz): the generic refusal. */
	readonly op: { readonly op: string }
}

export type RefusalVerb = keyof RefusalContexts

type Build<V extends RefusalVerb> = (refusal: WireRefusal, context: RefusalContexts[V]) => Error

interface VerbRules<V extends RefusalVerb> {
	readonly codes: { readonly [C in AgentRefusalCode]?: Build<V> }
	readonly otherwise?: Build<V>
}

/** The guest's own explanation when it gave one, else the refusal text. */
function explanation(refusal: WireRefusal): string {
	return refusal.message ?? refusal.text
}

const cancelRefused: Build<'cancel'> = (refusal, { executionId }) =>
	new ExecutionCancelRefusedError(executionId, refusal.text)

function processRefused(reason: ProcessInputRefusedError['reason']): Build<'process'> {
	return (refusal, { operation, executionId }) =>
		new ProcessInputRefusedError(executionId, operation, reason, {
			guestCode: refusal.code === '' ? refusal.text : refusal.code,
			...(refusal.executionState === undefined ? {} : { executionState: refusal.executionState }),
		})
}

const flushUnsupported: Build<'flush'> = (refusal) =>
	new FlushUnsupportedError(
		explanation(refusal),
		refusal.known === undefined ? {} : { guestCode: refusal.known },
	)

/**
 * A path over the wire's limits is the argument error the host raises itself for the same path
 * (`sandbox-arguments.ts`); the guest only sees one when its own resolution made the path longer.
 */
function pathOverLimit(kind: PathLimitViolation['kind']): Build<'file'> {
	return (refusal, { operation, parameter }) =>
		new SandboxArgumentError(
			operation,
			parameter,
			pathLimitExpectation(kind),
			`a path the guest refused as ${refusal.code}`,
		)
}

export const REFUSAL_TO_ERROR: { readonly [V in RefusalVerb]: VerbRules<V> } = {
	reserve: {
		codes: {
			unknown_op: () =>
				new RemoteProtocolError(
					'reserve-execution: the guest does not know the op; rebuild the guest image from this release',
				),
			agent_retiring: () =>
				new RemoteCancellationUnknownError(undefined, 'the guest agent is retiring', {
					guestCode: AGENT_REFUSAL.agent_retiring,
				}),
		},
		otherwise: (refusal) => new RemoteExecutionRefusedError(refusal.text),
	},
	cancel: {
		codes: {
			unknown_execution: cancelRefused,
			invalid_execution_id: cancelRefused,
			cancellation_unconfirmed: (_refusal, { executionId }) =>
				new RemoteCancellationUnknownError(
					executionId,
					'the guest could not confirm termination and is retiring',
					{ guestCode: AGENT_REFUSAL.cancellation_unconfirmed },
				),
		},
	},
	execute: {
		codes: {},
		otherwise: (refusal) => new RemoteCommandError(refusal.text),
	},
	attach: {
		codes: {},
		otherwise: (refusal, { executionId }) =>
			new ExecutionNotAttachableError(executionId, refusal.text, refusal.executionState),
	},
	process: {
		codes: {
			stdin_not_open: processRefused('stdin-not-open'),
			unknown_execution: processRefused('unknown-execution'),
		},
		otherwise: processRefused('input-refused'),
	},
	file: {
		codes: {
			path_escapes_workspace: (_refusal, { path, operation, cause }) =>
				new SandboxPathEscapeError(path, operation, cause === undefined ? {} : { cause }),
			path_too_long: pathOverLimit('too-long'),
			path_component_too_long: pathOverLimit('component-too-long'),
			path_contains_nul: pathOverLimit('contains-nul'),
		},
		otherwise: (refusal, { path, operation, cause }) =>
			new SandboxFileError(
				path,
				operation,
				refusal.code === '' ? 'EIO' : refusal.code,
				refusal.text,
				cause === undefined ? {} : { cause },
			),
	},
	session: {
		codes: {},
		otherwise: (refusal, { operation, sessionId }) => {
			const detail = refusal.message ?? refusal.detail
			return new SessionRefusedError(
				operation,
				sessionId,
				refusal.code === '' ? refusal.text : refusal.code,
				{
					...(refusal.nextOffset === undefined ? {} : { nextOffset: refusal.nextOffset }),
					...(detail === undefined ? {} : { detail }),
				},
			)
		},
	},
	quiesce: {
		codes: {
			quiesce_unconfirmed: (refusal) =>
				new QuiesceUnconfirmedError(refusal.pid, explanation(refusal)),
			unknown_op: () => new QuiesceUnsupportedError(),
		},
	},
	flush: {
		codes: {
			flush_unconfirmed: (refusal) => new FlushUnconfirmedError(explanation(refusal)),
			flush_unsupported: flushUnsupported,
			flush_unsupported_platform: flushUnsupported,
		},
	},
	op: { codes: {} },
}

/** The error the verb names for this code, or undefined when it names none (no `otherwise`). */
export function namedRefusalError<V extends RefusalVerb>(
	verb: V,
	refusal: WireRefusal,
	context: RefusalContexts[V],
): Error | undefined {
	const rules: VerbRules<V> = REFUSAL_TO_ERROR[verb]
	const build =
		(refusal.known === undefined ? undefined : rules.codes[refusal.known]) ?? rules.otherwise
	return build?.(refusal, context)
}

/** The error a caller sees for `refusal` answering `verb`. */
export function refusalToError<V extends RefusalVerb>(
	verb: V,
	refusal: WireRefusal,
	context: RefusalContexts[V],
): Error {
	if (refusal.known === AGENT_REFUSAL.unauthorized) return new AgentUnauthorizedError(context.op)
	return (
		namedRefusalError(verb, refusal, context) ??
		new AgentOpRefusedError(context.op, refusal.text, 'op-refused', refusal)
	)
}
