/**
 * What a non-2xx answer from the API server means, decided from the status, the Status body and
 * the headers alone (pure, table-tested), and the one error class each verb turns it into.
 * "Gone" (404/410) is an outcome only where the caller asked for the object to change or go —
 * a DELETE or a PATCH — and a plain failure everywhere else. A JSON-patch `test` that did not hold
 * is recognised on the 422 the API server answers with: either its wording names the test, or — as
 * kube-apiserver does — the 422 carries no field causes at all ("the server rejected our request due
 * to an error in our request"), which means the patch document could not be applied, as opposed to
 * an object that failed validation (that 422 always lists its causes). Only a JSON patch that
 * carries a `test` op turns either into `KubernetesPatchNotAppliedError`.
 */

import { isRecord } from '../../../common/is-record.js'
import { parseRetryAfterMs } from '../../../contract/retry-after.js'
import {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	type KubernetesApiErrorFields,
	KubernetesConflictError,
	type KubernetesFailureKind,
	type KubernetesHttpMethod,
	KubernetesPatchNotAppliedError,
} from './api-errors.js'

export interface KubernetesFailure {
	readonly kind: KubernetesFailureKind
	readonly status: number
	/** The Status object's `reason` (`NotFound`, …), when the body is a Status. */
	readonly statusReason?: string
	readonly message?: string
	readonly retryAfterMs?: number
	readonly retryable: boolean
}

/** Header values by lower-case name. */
export type ResponseHeaders = Readonly<Record<string, string | undefined>>

const PATCH_TEST_FAILED = /\btest(ing value \S+)? failed\b|\btest operation\b.*\bfailed\b/i

export function classifyKubernetesFailure(
	status: number,
	body: unknown,
	headers: ResponseHeaders,
	nowMs: number = Date.now(),
): KubernetesFailure {
	const record = isRecord(body) ? body : undefined
	const statusReason =
		typeof record?.reason === 'string' && record.reason !== '' ? record.reason : undefined
	const message =
		typeof record?.message === 'string'
			? record.message
			: typeof body === 'string' && body !== ''
				? body.slice(0, 300)
				: undefined
	const details = isRecord(record?.details) ? record.details : undefined
	const retryAfterMs = parseRetryAfterMs(headers['retry-after'], details?.retryAfterSeconds, nowMs)
	const causes = Array.isArray(details?.causes) && details.causes.length > 0
	const kind = failureKind(status, message, causes)
	return {
		kind,
		status,
		...(statusReason === undefined ? {} : { statusReason }),
		...(message === undefined ? {} : { message }),
		...(retryAfterMs === undefined ? {} : { retryAfterMs }),
		retryable: kind === 'throttled' || kind === 'server-error',
	}
}

function failureKind(
	status: number,
	message: string | undefined,
	hasCauses: boolean,
): KubernetesFailureKind {
	const testFailed = message !== undefined && PATCH_TEST_FAILED.test(message)
	if (status === 404 || status === 410) return 'gone'
	if (status === 409) return testFailed ? 'patch-test-failed' : 'conflict'
	if (status === 422) {
		if (testFailed) return 'patch-test-failed'
		return hasCauses ? 'invalid' : 'patch-unapplicable'
	}
	if (status === 401) return 'unauthorized'
	if (status === 403) return 'forbidden'
	if (status === 429) return 'throttled'
	if (status >= 500) return 'server-error'
	return 'other'
}

/**
 * The error a failed request rejects with, for this verb; `conditionalPatch` = the request was a
 * JSON patch carrying a `test` op.
 */
export function kubernetesFailureError(
	verb: KubernetesHttpMethod,
	path: string,
	failure: KubernetesFailure,
	conditionalPatch = false,
): KubernetesApiError {
	const fields: KubernetesApiErrorFields = {
		verb,
		path,
		transport: 'status',
		status: failure.status,
		retryable: failure.retryable,
		kind: failure.kind,
		...(failure.statusReason === undefined ? {} : { statusReason: failure.statusReason }),
		...(failure.message === undefined ? {} : { statusMessage: failure.message }),
		...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs }),
	}
	if (failure.kind === 'gone' && (verb === 'DELETE' || verb === 'PATCH')) {
		return new KubernetesAlreadyGoneError(fields)
	}
	if (failure.kind === 'conflict') return new KubernetesConflictError(fields)
	const notApplied = failure.kind === 'patch-test-failed' || failure.kind === 'patch-unapplicable'
	if (notApplied && verb === 'PATCH' && conditionalPatch) {
		return new KubernetesPatchNotAppliedError(fields)
	}
	return new KubernetesApiError(fields)
}

/** A response body as JSON when it is JSON, else the text (a proxy's HTML page), else undefined. */
export function parseResponseBody(text: string): unknown {
	if (text === '') return undefined
	try {
		return JSON.parse(text)
	} catch {
		return text
	}
}
