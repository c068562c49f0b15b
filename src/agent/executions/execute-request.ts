/**
 * Validates an `execute` body (wire `ExecuteRequest`) once, on entry, into a fully resolved request
 * with every default applied. Pure: no I/O (the working directory is resolved separately, against
 * the filesystem). Every failure is an `OpRefusal` whose `error` is the wire refusal string.
 */

import { isExecutionId } from '../../wire/execution-id.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { AgentConfig } from '../handler/config.js'
import { OpRefusal } from '../handler/op-refusal.js'
import {
	isIntegerIn,
	isStringArray,
	isStringRecord,
	POSITIVE_INTEGER,
} from '../handler/value-checks.js'

export interface ResolvedExecuteRequest {
	readonly executionId?: string
	readonly command: string
	readonly args: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
	readonly stdin?: string
	readonly timeoutMs: number
	readonly maxOutputBytes: number
	/** Keep the output in the guest (needs `executionId`): the run outlives its connection. */
	readonly retainOutput?: boolean
	/** Reserve `executionId` now if this agent has not seen it (`EXECUTE_RESERVES_FEATURE`). */
	readonly reserve?: boolean
	/** false: the whole tree is killed when the command's own process exits. */
	readonly keepDescendants?: boolean
	/** Keep stdin open for `execution-input` (a retained run without `stdin`). */
	readonly openStdin?: boolean
}

type Limits = Pick<AgentConfig, 'maxTimeoutMs' | 'defaultTimeoutMs' | 'defaultMaxOutputBytes'> &
	Partial<Pick<AgentConfig, 'executeReserves'>>

function isPositiveInteger(value: unknown): value is number {
	return isIntegerIn(value, POSITIVE_INTEGER)
}

function stringRecord(value: unknown): Record<string, string> | undefined {
	if (!isStringRecord(value)) return undefined
	// Null prototype: a caller-supplied `__proto__` key stays an ordinary variable name.
	return Object.assign(Object.create(null) as Record<string, string>, value)
}

export function resolveTimeoutMs(value: unknown, limits: Limits): number {
	if (value === undefined || value === null)
		return Math.min(limits.defaultTimeoutMs, limits.maxTimeoutMs)
	if (!isPositiveInteger(value) || value > limits.maxTimeoutMs) {
		throw new OpRefusal(
			formatRefusal(
				AGENT_REFUSAL.invalid_timeout,
				`timeoutMs must be a positive integer no greater than ${limits.maxTimeoutMs} (NAMZU_SANDBOX_MAX_TIMEOUT_MS), got ${JSON.stringify(value)}`,
			),
		)
	}
	return value
}

export function parseExecuteRequest(
	body: Record<string, unknown>,
	limits: Limits,
): ResolvedExecuteRequest {
	const { command, executionId } = body
	if (typeof command !== 'string' || command === '')
		throw new OpRefusal(AGENT_REFUSAL.missing_command)
	if (executionId !== undefined && !isExecutionId(executionId)) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_execution_id)
	}
	const args = body.args === undefined ? [] : body.args
	if (!isStringArray(args))
		throw new OpRefusal(
			formatRefusal(AGENT_REFUSAL.invalid_args, 'args must be an array of strings'),
		)
	const env = body.env === undefined ? undefined : stringRecord(body.env)
	if (body.env !== undefined && env === undefined) {
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_env, 'env must map names to strings'))
	}
	if (body.cwd !== undefined && typeof body.cwd !== 'string') {
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_cwd, 'cwd must be a string'))
	}
	if (body.stdin !== undefined && typeof body.stdin !== 'string') {
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.invalid_stdin, 'stdin must be a string'))
	}
	if (body.retainOutput !== undefined && typeof body.retainOutput !== 'boolean') {
		throw new OpRefusal(
			formatRefusal(AGENT_REFUSAL.invalid_retain_output, 'retainOutput must be a boolean'),
		)
	}
	if (body.keepDescendants !== undefined && typeof body.keepDescendants !== 'boolean') {
		throw new OpRefusal(
			formatRefusal(AGENT_REFUSAL.invalid_keep_descendants, 'keepDescendants must be a boolean'),
		)
	}
	if (
		body.openStdin !== undefined &&
		(typeof body.openStdin !== 'boolean' ||
			(body.openStdin && (body.retainOutput !== true || body.stdin !== undefined)))
	) {
		throw new OpRefusal(
			formatRefusal(
				AGENT_REFUSAL.invalid_stdin,
				'openStdin must be a boolean, true only with retainOutput and without stdin',
			),
		)
	}
	if (body.retainOutput === true && executionId === undefined) {
		throw new OpRefusal(AGENT_REFUSAL.retain_requires_execution_id)
	}
	// Switched off, `reserve` is ignored exactly as by an agent that predates it.
	const reserve = limits.executeReserves === true && body.reserve === true
	if (reserve && executionId === undefined) throw new OpRefusal(AGENT_REFUSAL.invalid_execution_id)
	const maxOutputBytes = body.maxOutputBytes ?? limits.defaultMaxOutputBytes
	if (!isPositiveInteger(maxOutputBytes)) {
		throw new OpRefusal(
			formatRefusal(
				AGENT_REFUSAL.invalid_max_output_bytes,
				'maxOutputBytes must be a positive integer',
			),
		)
	}
	return {
		...(executionId === undefined ? {} : { executionId }),
		command,
		args,
		...(body.cwd === undefined ? {} : { cwd: body.cwd }),
		...(env === undefined ? {} : { env }),
		...(body.stdin === undefined ? {} : { stdin: body.stdin }),
		timeoutMs: resolveTimeoutMs(body.timeoutMs, limits),
		maxOutputBytes,
		...(body.retainOutput === true ? { retainOutput: true } : {}),
		...(reserve ? { reserve: true } : {}),
		...(body.keepDescendants === false ? { keepDescendants: false } : {}),
		...(body.openStdin === true ? { openStdin: true } : {}),
	}
}
