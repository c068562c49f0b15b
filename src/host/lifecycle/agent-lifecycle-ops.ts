/**
 * `quiesce` and `flush` through the agent: feature-checked before dialing, one request-shaped
 * exchange each, replies validated, refusals turned into named errors by the one table.
 * `AgentSandbox.quiesce()` / `.flush()` delegate here; the Kubernetes workspace will too.
 */

import { FLUSH_FEATURE, QUIESCE_FEATURE } from '../../wire/features.js'
import type { FlushReply, QuiescedProcess, QuiesceReply } from '../../wire/lifecycle-ops.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { refusalOf } from '../transport/exchange.js'
import { requireGuestFeature } from '../transport/guest-features.js'

/** Slack over the guest's own bounds before the host stops waiting for an answer. */
const REPLY_SLACK_MS = 5000
/** The guest's default `NAMZU_AGENT_QUIESCE_DEADLINE_MS`; the host waits that long plus slack. */
export const QUIESCE_REPLY_TIMEOUT_MS = 20_000 + REPLY_SLACK_MS
/** The guest's default `NAMZU_AGENT_FLUSH_TIMEOUT_MS`. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 10_000

/** Options of `quiesce`. */
export interface QuiesceOptions {
	/** SIGTERM → SIGKILL wait per round; default the guest's `NAMZU_AGENT_QUIESCE_GRACE_MS`. */
	readonly graceMs?: number
	readonly signal?: AbortSignal
}

/** What `quiesce()` answers: the guest's reply without its `ok`. */
export type QuiesceReport = Omit<QuiesceReply, 'ok'>

/** Options of `flush`. */
export interface FlushOptions {
	/** How long the guest may spend in the sync; default the guest's own (10 000). */
	readonly timeoutMs?: number
	readonly signal?: AbortSignal
}

/** What `flush()` answers: the guest's reply without its `ok`. */
export type FlushReport = Omit<FlushReply, 'ok'>

function isQuiescedProcess(value: unknown): value is QuiescedProcess {
	if (value === null || typeof value !== 'object') return false
	const entry = value as Record<string, unknown>
	return (
		typeof entry.pid === 'number' &&
		typeof entry.command === 'string' &&
		(entry.signal === 'SIGTERM' || entry.signal === 'SIGKILL')
	)
}

export function parseQuiesceReply(reply: Record<string, unknown>): QuiesceReport {
	const { scope, graceMs, rounds, stopped } = reply
	if (
		(scope !== 'pid-namespace' && scope !== 'owned-sessions') ||
		typeof graceMs !== 'number' ||
		typeof rounds !== 'number' ||
		!Array.isArray(stopped) ||
		!stopped.every(isQuiescedProcess)
	) {
		throw new RemoteProtocolError('quiesce: the guest answered a malformed report')
	}
	return { scope, graceMs, rounds, stopped }
}

export async function quiesceThroughAgent(
	transport: AgentTransport,
	options: QuiesceOptions = {},
): Promise<QuiesceReport> {
	await requireGuestFeature(transport, QUIESCE_FEATURE, 'quiesce', options.signal)
	const reply = await transport.request(
		AGENT_OP.quiesce,
		options.graceMs === undefined ? {} : { graceMs: options.graceMs },
		{
			...(options.signal ? { signal: options.signal } : {}),
			idleTimeoutMs: Math.max(transport.options.readIdleTimeoutMs, QUIESCE_REPLY_TIMEOUT_MS),
		},
	)
	const refusal = refusalOf(reply)
	if (refusal) throw refusalToError('quiesce', refusal, { op: AGENT_OP.quiesce })
	return parseQuiesceReply(reply)
}

export async function flushThroughAgent(
	transport: AgentTransport,
	options: FlushOptions = {},
): Promise<FlushReport> {
	await requireGuestFeature(transport, FLUSH_FEATURE, 'flush', options.signal)
	const reply = await transport.request(
		AGENT_OP.flush,
		options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
		{
			...(options.signal ? { signal: options.signal } : {}),
			idleTimeoutMs: Math.max(
				transport.options.readIdleTimeoutMs,
				(options.timeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS) + REPLY_SLACK_MS,
			),
		},
	)
	const refusal = refusalOf(reply)
	if (refusal) throw refusalToError('flush', refusal, { op: AGENT_OP.flush })
	const { durationMs, workspace } = reply
	if (typeof durationMs !== 'number' || typeof workspace !== 'string') {
		throw new RemoteProtocolError('flush: the guest answered a malformed report')
	}
	return { durationMs, workspace }
}
