// The pure rules that turn a non-2xx answer into one error class: the failure kind from status +
// Status body, Retry-After from the header or the Status details, and the class per verb.
import { describe, expect, it } from 'vitest'
import {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	KubernetesConflictError,
	type KubernetesHttpMethod,
	KubernetesPatchNotAppliedError,
} from '../../../../src/backends/kubernetes/api/api-errors.js'
import {
	classifyKubernetesFailure,
	kubernetesFailureError,
} from '../../../../src/backends/kubernetes/api/classify-kubernetes-failure.js'
import { parseRetryAfterMs } from '../../../../src/contract/retry-after.js'

const status = (code: number, reason: string, message = `${reason} happened`) => ({
	kind: 'Status',
	apiVersion: 'v1',
	status: 'Failure',
	code,
	reason,
	message,
})

const NOW = Date.parse('2026-01-01T00:00:00Z')

describe('classifyKubernetesFailure', () => {
	const rows = [
		[404, status(404, 'NotFound'), 'gone', false],
		[410, status(410, 'Gone'), 'gone', false],
		[409, status(409, 'Conflict', 'the object has been modified'), 'conflict', false],
		[409, status(409, 'AlreadyExists'), 'conflict', false],
		[
			422,
			{
				...status(422, 'Invalid', 'ConfigMap "Bad" is invalid: metadata.name: Invalid value'),
				details: { causes: [{ field: 'metadata.name', reason: 'FieldValueInvalid' }] },
			},
			'invalid',
			false,
		],
		[
			422,
			status(422, 'Invalid', 'the server rejected our request due to an error in our request'),
			'patch-unapplicable',
			false,
		],
		[
			422,
			status(
				422,
				'Invalid',
				'the server rejected our request: testing value /a failed: test failed',
			),
			'patch-test-failed',
			false,
		],
		[409, status(409, 'Conflict', 'test operation for path /x failed'), 'patch-test-failed', false],
		[401, status(401, 'Unauthorized'), 'unauthorized', false],
		[403, status(403, 'Forbidden'), 'forbidden', false],
		[429, status(429, 'TooManyRequests'), 'throttled', true],
		[500, status(500, 'InternalError'), 'server-error', true],
		[503, 'upstream connect error', 'server-error', true],
		[400, status(400, 'BadRequest'), 'other', false],
	] as const
	const cases = rows.map(([code, body, kind, retryable]) => ({
		code,
		body,
		kind,
		retryable,
		label: typeof body === 'string' ? body : `${body.reason}: ${body.message}`,
	}))
	it.each(cases)(
		'status $code ($label) is $kind, retryable $retryable',
		({ code, body, kind, retryable }) => {
			const failure = classifyKubernetesFailure(code, body, {}, NOW)
			expect(failure.kind).toBe(kind)
			expect(failure.retryable).toBe(retryable)
			expect(failure.status).toBe(code)
		},
	)

	it('carries the Status reason and message', () => {
		const failure = classifyKubernetesFailure(
			404,
			status(404, 'NotFound', 'pods "x" not found'),
			{},
		)
		expect(failure).toMatchObject({ statusReason: 'NotFound', message: 'pods "x" not found' })
	})

	it('reads Retry-After from the header before the Status details', () => {
		const body = { ...status(429, 'TooManyRequests'), details: { retryAfterSeconds: 7 } }
		expect(classifyKubernetesFailure(429, body, { 'retry-after': '2' }, NOW).retryAfterMs).toBe(
			2000,
		)
		expect(classifyKubernetesFailure(429, body, {}, NOW).retryAfterMs).toBe(7000)
		expect(
			classifyKubernetesFailure(429, status(429, 'TooManyRequests'), {}, NOW).retryAfterMs,
		).toBeUndefined()
	})
})

describe('parseRetryAfterMs', () => {
	it.each([
		['3', undefined, 3000],
		['0', undefined, 0],
		[' 12 ', undefined, 12_000],
		['Thu, 01 Jan 2026 00:00:05 GMT', undefined, 5000],
		['Wed, 31 Dec 2025 23:59:00 GMT', undefined, 0],
		['soon', 4, 4000],
		['-1', undefined, undefined],
		['1.5', undefined, undefined],
		[undefined, 1.5, 1500],
		[undefined, 'x', undefined],
		[undefined, undefined, undefined],
	] as const)('header %j, details %j → %j ms', (header, details, expected) => {
		expect(parseRetryAfterMs(header, details, NOW)).toBe(expected)
	})
})

describe('kubernetesFailureError', () => {
	const failure = (code: number, body: unknown) => classifyKubernetesFailure(code, body, {}, NOW)
	const generic422 = status(
		422,
		'Invalid',
		'the server rejected our request due to an error in our request',
	)
	const mappings = [
		['DELETE', 404, status(404, 'NotFound'), KubernetesAlreadyGoneError],
		['PATCH', 410, status(410, 'Gone'), KubernetesAlreadyGoneError],
		['GET', 404, status(404, 'NotFound'), KubernetesApiError],
		['POST', 409, status(409, 'AlreadyExists'), KubernetesConflictError],
		[
			'DELETE',
			409,
			status(409, 'Conflict', 'Precondition failed: UID in precondition'),
			KubernetesConflictError,
		],
		[
			'PATCH',
			422,
			status(422, 'Invalid', 'testing value /x failed: test failed'),
			KubernetesPatchNotAppliedError,
		],
		['PATCH', 422, generic422, KubernetesPatchNotAppliedError],
		['POST', 422, status(422, 'Invalid'), KubernetesApiError],
		['GET', 503, status(503, 'ServiceUnavailable'), KubernetesApiError],
	] as const
	const mappingCases = mappings.map(([verb, code, body, expected]) => ({
		verb,
		code,
		body,
		expected,
		className: expected.name,
	}))
	it.each(mappingCases)(
		'$verb answered $code (a PATCH here carries a test op) becomes $className',
		({ verb, code, body, expected }) => {
			const error = kubernetesFailureError(
				verb as KubernetesHttpMethod,
				'/api/v1/x',
				failure(code, body),
				verb === 'PATCH',
			)
			expect(error.constructor).toBe(expected)
			expect(error.name).toBe(expected.name)
			expect(error).toBeInstanceOf(KubernetesApiError)
			expect(error).toMatchObject({ verb, path: '/api/v1/x', status: code, transport: 'status' })
			expect(error.statusReason).toBe(body.reason)
			expect(error.message).toMatch(new RegExp(`^kubernetes ${verb} /api/v1/x failed: ${code} `))
		},
	)

	it('a 422 on a JSON patch without a test op, or on a merge patch, stays a plain KubernetesApiError', () => {
		const error = kubernetesFailureError('PATCH', '/api/v1/x', failure(422, generic422), false)
		expect(error.constructor).toBe(KubernetesApiError)
	})
})
