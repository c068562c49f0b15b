/**
 * The one table from a guest refusal to the caller's error: every row it names, and — for every
 * verb and every code the wire defines — that a code the verb does not name becomes the verb's
 * fallback, so no code ever escapes as an unnamed error.
 */
import { describe, expect, it } from 'vitest'
import {
	SandboxArgumentError,
	SandboxError,
	SandboxFileError,
	SandboxPathEscapeError,
} from '../../../src/contract/errors.js'
import {
	FlushUnsupportedError,
	QuiesceUnsupportedError,
} from '../../../src/host/refusals/guest-feature-errors.js'
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
} from '../../../src/host/refusals/refusal-errors.js'
import {
	namedRefusalError,
	REFUSAL_TO_ERROR,
	type RefusalContexts,
	type RefusalVerb,
	refusalToError,
} from '../../../src/host/refusals/refusal-to-error.js'
import {
	AGENT_REFUSAL_CODES,
	type AgentRefusalCode,
	parseRefusal,
	type WireRefusal,
} from '../../../src/wire/refusals.js'

const ID = 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10'

const CONTEXTS: { readonly [V in RefusalVerb]: RefusalContexts[V] } = {
	reserve: { op: 'reserve-execution' },
	cancel: { op: 'cancel-execution', executionId: ID },
	execute: { op: 'execute' },
	attach: { op: 'attach-execution', executionId: ID },
	process: { op: 'execution-input', operation: 'write', executionId: ID },
	file: { op: 'read-file', operation: 'readFile', path: '/workspace/a', parameter: 'path' },
	session: { op: 'attach-session', operation: 'readSession', sessionId: 's1' },
	quiesce: { op: 'quiesce' },
	flush: { op: 'flush' },
	op: { op: 'terminal' },
}

const VERBS = Object.keys(CONTEXTS) as RefusalVerb[]

function build<V extends RefusalVerb>(verb: V, refusal: WireRefusal): Error {
	return refusalToError(verb, refusal, CONTEXTS[verb])
}

type Constructor = abstract new (...args: never[]) => Error

interface NamedRow {
	readonly verb: RefusalVerb
	readonly code: AgentRefusalCode
	/** The refusal as the guest sends it (text and fields). */
	readonly refusal: WireRefusal
	readonly error: Constructor
	readonly fields: Readonly<Record<string, unknown>>
}

/** Every row the table names for a verb, with the fields each error carries. */
const NAMED: readonly NamedRow[] = [
	{
		verb: 'process',
		code: 'stdin_not_open',
		refusal: parseRefusal('stdin_not_open', { executionState: 'completed' }),
		error: ProcessInputRefusedError,
		fields: {
			reason: 'stdin-not-open',
			executionId: ID,
			operation: 'write',
			guestCode: 'stdin_not_open',
			executionState: 'completed',
		},
	},
	{
		verb: 'process',
		code: 'unknown_execution',
		refusal: parseRefusal('unknown_execution'),
		error: ProcessInputRefusedError,
		fields: { reason: 'unknown-execution', executionId: ID, guestCode: 'unknown_execution' },
	},
	{
		verb: 'reserve',
		code: 'unknown_op',
		refusal: parseRefusal('unknown_op: reserve-execution'),
		error: RemoteProtocolError,
		fields: { reason: 'protocol-error' },
	},
	{
		verb: 'reserve',
		code: 'agent_retiring',
		refusal: parseRefusal('agent_retiring'),
		error: RemoteCancellationUnknownError,
		fields: { reason: 'cancellation-unknown', retryable: false, executionId: undefined },
	},
	{
		verb: 'cancel',
		code: 'unknown_execution',
		refusal: parseRefusal('unknown_execution'),
		error: ExecutionCancelRefusedError,
		fields: { executionId: ID, refusal: 'unknown_execution' },
	},
	{
		verb: 'cancel',
		code: 'invalid_execution_id',
		refusal: parseRefusal('invalid_execution_id'),
		error: ExecutionCancelRefusedError,
		fields: { executionId: ID, refusal: 'invalid_execution_id' },
	},
	{
		verb: 'cancel',
		code: 'cancellation_unconfirmed',
		refusal: parseRefusal('cancellation_unconfirmed', { message: 'did not confirm' }),
		error: RemoteCancellationUnknownError,
		fields: { executionId: ID, retryable: false },
	},
	{
		verb: 'file',
		code: 'path_escapes_workspace',
		refusal: parseRefusal('path_escapes_workspace', { message: 'path escapes the workspace: ..' }),
		error: SandboxPathEscapeError,
		fields: { path: '/workspace/a', operation: 'readFile', reason: 'path-escape' },
	},
	{
		verb: 'file',
		code: 'path_too_long',
		refusal: parseRefusal('path_too_long: path must be at most 4096 bytes (UTF-8), got 5000 bytes'),
		error: SandboxArgumentError,
		fields: {
			reason: 'invalid-argument',
			method: 'readFile',
			parameter: 'path',
			expected: 'at most 4096 bytes (UTF-8)',
			received: 'a path the guest refused as path_too_long',
		},
	},
	{
		verb: 'file',
		code: 'path_component_too_long',
		refusal: parseRefusal('path_component_too_long: path must be …, got a component of 300 bytes'),
		error: SandboxArgumentError,
		fields: {
			method: 'readFile',
			parameter: 'path',
			expected: 'made of components of at most 255 bytes (UTF-8)',
		},
	},
	{
		verb: 'file',
		code: 'path_contains_nul',
		refusal: parseRefusal('path_contains_nul: path must be free of NUL bytes, got …'),
		error: SandboxArgumentError,
		fields: { method: 'readFile', parameter: 'path', expected: 'free of NUL bytes' },
	},
	{
		verb: 'quiesce',
		code: 'quiesce_unconfirmed',
		refusal: parseRefusal('quiesce_unconfirmed', {
			message: 'process 42 outlived SIGKILL',
			pid: 42,
		}),
		error: QuiesceUnconfirmedError,
		fields: { pid: 42, guestMessage: 'process 42 outlived SIGKILL' },
	},
	{
		verb: 'quiesce',
		code: 'unknown_op',
		refusal: parseRefusal('unknown_op: quiesce'),
		error: QuiesceUnsupportedError,
		fields: { reason: 'quiesce-unsupported' },
	},
	{
		verb: 'flush',
		code: 'flush_unconfirmed',
		refusal: parseRefusal('flush_unconfirmed', { message: 'sync exited 1' }),
		error: FlushUnconfirmedError,
		fields: { guestMessage: 'sync exited 1', retryable: true },
	},
	{
		verb: 'flush',
		code: 'flush_unsupported',
		refusal: parseRefusal('flush_unsupported', { message: 'no sync program' }),
		error: FlushUnsupportedError,
		fields: { reason: 'flush-unsupported', message: 'flush refused: no sync program' },
	},
	{
		verb: 'flush',
		code: 'flush_unsupported_platform',
		refusal: parseRefusal('flush_unsupported_platform'),
		error: FlushUnsupportedError,
		fields: { message: 'flush refused: flush_unsupported_platform' },
	},
]

/** What any other code becomes on each verb (`undefined`: the generic `AgentOpRefusedError`). */
const OTHERWISE: { readonly [V in RefusalVerb]: Constructor } = {
	reserve: RemoteExecutionRefusedError,
	cancel: AgentOpRefusedError,
	execute: RemoteCommandError,
	attach: ExecutionNotAttachableError,
	process: ProcessInputRefusedError,
	file: SandboxFileError,
	session: SessionRefusedError,
	quiesce: AgentOpRefusedError,
	flush: AgentOpRefusedError,
	op: AgentOpRefusedError,
}

describe('REFUSAL_TO_ERROR', () => {
	it.each(NAMED)('$verb: $code becomes the error the table names', (row) => {
		const error = build(row.verb, row.refusal)
		expect(error).toBeInstanceOf(row.error)
		expect(error).toMatchObject(row.fields)
	})

	it('names exactly the rows pinned above, verb by verb', () => {
		for (const verb of VERBS) {
			const pinned = NAMED.filter((row) => row.verb === verb).map((row) => row.code)
			expect(Object.keys(REFUSAL_TO_ERROR[verb].codes).sort(), verb).toEqual(pinned.sort())
		}
	})

	it.each(VERBS)('%s: unauthorized is AgentUnauthorizedError naming the op', (verb) => {
		const error = build(verb, parseRefusal('unauthorized'))
		expect(error).toBeInstanceOf(AgentUnauthorizedError)
		expect(error).toMatchObject({ op: CONTEXTS[verb].op, reason: 'unauthorized' })
	})

	it.each(VERBS)('%s: every other code the wire defines becomes the verb fallback', (verb) => {
		const named = new Set(Object.keys(REFUSAL_TO_ERROR[verb].codes))
		for (const code of AGENT_REFUSAL_CODES) {
			if (code === 'unauthorized' || named.has(code)) continue
			const error = build(verb, parseRefusal(`${code}: detail`))
			expect(error, code).toBeInstanceOf(OTHERWISE[verb])
			expect(error, code).toBeInstanceOf(SandboxError)
		}
	})

	it.each(VERBS)('%s: an errno answer or an unrecognised one gets the fallback too', (verb) => {
		for (const text of ['ENOENT: no such file or directory, open /x', 'spawn nope ENOENT', '']) {
			expect(build(verb, parseRefusal(text)), text).toBeInstanceOf(SandboxError)
		}
	})

	it('the fallbacks carry the guest code and fields', () => {
		expect(build('reserve', parseRefusal('execution_capacity: limit 1024'))).toMatchObject({
			guestError: 'execution_capacity: limit 1024',
			retryable: true,
		})
		expect(build('reserve', parseRefusal('invalid_execution_id'))).toMatchObject({
			retryable: false,
		})
		expect(build('execute', parseRefusal('invalid_cwd: not a directory: x'))).toMatchObject({
			guestError: 'invalid_cwd: not a directory: x',
		})
		expect(
			build('attach', parseRefusal('output_not_retained', { executionState: 'reserved' })),
		).toMatchObject({ executionId: ID, refusal: 'output_not_retained', executionState: 'reserved' })
		expect(build('file', parseRefusal('ENOENT: no such file or directory'))).toMatchObject({
			code: 'ENOENT',
			path: '/workspace/a',
			operation: 'readFile',
		})
		expect(
			build('file', parseRefusal('read_file_range_too_large: requested 9 bytes, limit 1')),
		).toMatchObject({ code: 'read_file_range_too_large' })
		expect(build('file', parseRefusal(''))).toMatchObject({ code: 'EIO' })
		expect(
			build('session', parseRefusal('session_capacity: limit 16 (NAMZU_AGENT_MAX_SESSIONS)')),
		).toMatchObject({
			refusal: 'session_capacity',
			sessionId: 's1',
			operation: 'readSession',
			retryable: true,
			message: expect.stringContaining('(limit 16 (NAMZU_AGENT_MAX_SESSIONS))'),
		})
		expect(build('session', parseRefusal('invalid_offset', { nextOffset: 12 }))).toMatchObject({
			refusal: 'invalid_offset',
			nextOffset: 12,
			retryable: false,
		})
		expect(build('op', parseRefusal('invalid_terminal_size'))).toMatchObject({
			op: 'terminal',
			guestError: 'invalid_terminal_size',
			refusal: { known: 'invalid_terminal_size' },
		})
	})

	it('the file verbs keep the thrown refusal as the cause', () => {
		const cause = new Error('as thrown')
		const error = refusalToError('file', parseRefusal('path_escapes_workspace'), {
			...CONTEXTS.file,
			cause,
		})
		expect(error.cause).toBe(cause)
	})

	it('a by-id cancel names only its final refusals: anything else is retried', () => {
		const named = (text: string) =>
			namedRefusalError('cancel', parseRefusal(text), CONTEXTS.cancel)?.constructor
		expect(named('unknown_execution')).toBe(ExecutionCancelRefusedError)
		expect(named('cancellation_unconfirmed')).toBe(RemoteCancellationUnknownError)
		expect(named('unauthorized')).toBeUndefined()
		expect(named('agent_retiring')).toBeUndefined()
		expect(named('unexpected')).toBeUndefined()
	})
})
