/**
 * One Azure Resource Manager call over the platform's `fetch`: a fresh bearer token from the
 * caller's `getArmToken()` per call, sent only to `ARM_ENDPOINT` (the URL is always built here,
 * never taken from a reply, and redirects are refused), the reply read to a bound, and a non-2xx
 * answer mapped to an `ACIArmError` whose `reason` says what to do. ARM's error envelope is
 * `{ "error": { "code", "message" } }` (the Container Instances REST reference,
 * https://learn.microsoft.com/en-us/rest/api/container-instances/).
 */

import { raceSignal } from '../../../common/bounded-promise.js'
import { isRecord } from '../../../common/is-record.js'
import { parseRetryAfterMs } from '../../../contract/retry-after.js'
import { ARM_ENDPOINT } from './aci-config.js'
import { ACIArmError, type ArmFailureReason, type ArmOperation } from './aci-errors.js'

/** The `fetch` this client calls: the platform's, or a recording one in tests. */
export type ArmFetch = (url: string, init: RequestInit) => Promise<Response>

/** Largest ARM reply read: a container group is a few KiB. */
export const MAX_ARM_REPLY_BYTES = 1024 * 1024

export interface ArmClient {
	readonly fetch: ArmFetch
	readonly getArmToken: () => Promise<string>
	readonly apiVersion: string
}

export interface ArmReply {
	readonly status: number
	readonly body: Record<string, unknown> | undefined
	readonly retryAfterMs: number | undefined
}

export interface ArmCall {
	readonly operation: ArmOperation
	readonly method: 'PUT' | 'GET' | 'DELETE'
	/** A resource path under `ARM_ENDPOINT` (`/subscriptions/…`). */
	readonly path: string
	readonly body?: unknown
	readonly signal: AbortSignal
}

/** A header-safe token: the value is never echoed, only whether it is usable. */
const TOKEN = /^[\x21-\x7e]+$/

async function bearer(client: ArmClient, call: ArmCall): Promise<string> {
	let token: unknown
	try {
		// A token source that never answers is bounded by the call's signal like the request is.
		token = await raceSignal(
			Promise.resolve().then(() => client.getArmToken()),
			call.signal,
		)
	} catch (cause) {
		if (call.signal.aborted) throw call.signal.reason
		throw armError(call, 'token-unavailable', {}, { cause })
	}
	if (typeof token !== 'string' || !TOKEN.test(token)) {
		throw armError(call, 'token-unavailable', {
			armMessage: 'getArmToken() resolved to something that is not a bearer token',
		})
	}
	return token
}

function armError(
	call: ArmCall,
	reason: ArmFailureReason,
	fields: {
		readonly status?: number
		readonly armCode?: string
		readonly armMessage?: string
		readonly retryAfterMs?: number
	},
	options: { readonly cause?: unknown } = {},
): ACIArmError {
	return new ACIArmError(
		{ reason, operation: call.operation, method: call.method, path: call.path, ...fields },
		options,
	)
}

/** Reads at most `MAX_ARM_REPLY_BYTES` of the body, cancelling the rest. */
async function readBounded(call: ArmCall, response: Response): Promise<string> {
	const reader = response.body?.getReader()
	if (reader === undefined) return ''
	const chunks: Uint8Array[] = []
	let total = 0
	for (;;) {
		const { done, value } = await reader.read()
		if (done) break
		total += value.byteLength
		if (total > MAX_ARM_REPLY_BYTES) {
			await reader.cancel().catch(() => undefined)
			throw armError(call, 'protocol', {
				status: response.status,
				armMessage: `reply larger than ${MAX_ARM_REPLY_BYTES} bytes`,
			})
		}
		chunks.push(value)
	}
	return Buffer.concat(chunks).toString('utf8')
}

function parseBody(
	call: ArmCall,
	status: number,
	text: string,
): Record<string, unknown> | undefined {
	if (text.trim() === '') return undefined
	let parsed: unknown
	try {
		parsed = JSON.parse(text)
	} catch (cause) {
		if (status >= 400) return undefined
		throw armError(call, 'protocol', { status, armMessage: 'reply is not JSON' }, { cause })
	}
	if (!isRecord(parsed)) {
		throw armError(call, 'protocol', { status, armMessage: 'reply is not a JSON object' })
	}
	return parsed
}

/** ARM's `error.code` that says the pool could not hand a group out. */
const POOL_EMPTY = /standby|reuse/i
const QUOTA = /quota|limitexceeded|capacity/i

/** A non-2xx status and ARM's code → the reason a caller acts on. */
export function classifyArmFailure(status: number, armCode: string | undefined): ArmFailureReason {
	const code = armCode ?? ''
	if (status === 401) return 'auth'
	if (status === 403) return QUOTA.test(code) ? 'quota' : 'forbidden'
	if (status === 404) return 'not-found'
	if (status === 409) return POOL_EMPTY.test(code) ? 'pool-empty' : 'conflict'
	if (status === 429) return 'throttled'
	if (status >= 500) return 'server'
	if (POOL_EMPTY.test(code)) return 'pool-empty'
	if (QUOTA.test(code)) return 'quota'
	return 'rejected'
}

function envelope(body: Record<string, unknown> | undefined): { code?: string; message?: string } {
	const error = body?.error
	if (!isRecord(error)) return {}
	return {
		...(typeof error.code === 'string' ? { code: error.code.slice(0, 200) } : {}),
		...(typeof error.message === 'string' ? { message: error.message } : {}),
	}
}

/** One ARM request; resolves with any 2xx reply, throws `ACIArmError` for everything else. */
export async function armRequest(client: ArmClient, call: ArmCall): Promise<ArmReply> {
	call.signal.throwIfAborted()
	const token = await bearer(client, call)
	call.signal.throwIfAborted()
	const url = `${ARM_ENDPOINT}${call.path}?api-version=${encodeURIComponent(client.apiVersion)}`
	let response: Response
	try {
		response = await client.fetch(url, {
			method: call.method,
			headers: {
				authorization: `Bearer ${token}`,
				accept: 'application/json',
				...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
			},
			...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
			redirect: 'error',
			signal: call.signal,
		})
	} catch (cause) {
		if (call.signal.aborted) throw call.signal.reason
		throw armError(call, 'unreachable', {}, { cause })
	}
	const retryAfterMs = parseRetryAfterMs(
		response.headers.get('retry-after') ?? undefined,
		undefined,
		Date.now(),
	)
	let text: string
	try {
		text = await readBounded(call, response)
	} catch (cause) {
		if (call.signal.aborted) throw call.signal.reason
		if (cause instanceof ACIArmError) throw cause
		throw armError(call, 'unreachable', { status: response.status }, { cause })
	}
	const body = parseBody(call, response.status, text)
	if (response.status >= 200 && response.status < 300) {
		return { status: response.status, body, retryAfterMs }
	}
	const { code, message } = envelope(body)
	throw armError(call, classifyArmFailure(response.status, code), {
		status: response.status,
		...(code === undefined ? {} : { armCode: code }),
		...(message === undefined ? {} : { armMessage: message }),
		...(retryAfterMs === undefined ? {} : { retryAfterMs }),
	})
}
