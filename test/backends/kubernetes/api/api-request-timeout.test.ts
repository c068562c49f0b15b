// The bound's configuration: default, floor, refusal at construction (no value switches it off),
// and what the package root exports (the client factory itself stays internal; the constants'
// values are pinned by test/package/root-surface.test-d.ts).
import { describe, expect, expectTypeOf, it } from 'vitest'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { KubernetesApiRequestTimeoutConfigError } from '../../../../src/backends/kubernetes/api/index.js'
import * as root from '../../../../src/index.js'

const access = { server: 'https://k8s.example', getToken: () => 't' }
const fetch = async () => new Response('{}')

describe('apiRequestTimeoutMs', () => {
	it('a one-argument client uses the 30000 ms default', () => {
		expect(createKubernetesClient(access).apiRequestTimeoutMs).toBe(30_000)
		expect(createKubernetesClient(access, {}).apiRequestTimeoutMs).toBe(30_000)
	})

	it.each([0, 999, -1, Number.NaN, Number.POSITIVE_INFINITY])(
		'%s is refused at construction, before any request',
		(value) => {
			let requests = 0
			const counting = async () => {
				requests++
				return new Response('{}')
			}
			expect(() =>
				createKubernetesClient(access, { apiRequestTimeoutMs: value, fetch: counting }),
			).toThrow(KubernetesApiRequestTimeoutConfigError)
			expect(requests).toBe(0)
		},
	)

	it.each([1000, 120_000])('%i is accepted and used as the bound', (value) => {
		expect(
			createKubernetesClient(access, { apiRequestTimeoutMs: value, fetch }).apiRequestTimeoutMs,
		).toBe(value)
	})

	it('the refusal names the field and the floor', () => {
		const error = (() => {
			try {
				createKubernetesClient(access, { apiRequestTimeoutMs: 0 })
			} catch (caught) {
				return caught
			}
			return undefined
		})()
		expect(error).toMatchObject({
			name: 'KubernetesApiRequestTimeoutConfigError',
			field: 'apiRequestTimeoutMs',
			value: 0,
			reason: 'invalid-api-request-timeout',
		})
	})
})

describe('package root', () => {
	it('exports the API error classes and not the client factory', () => {
		for (const name of [
			'KubernetesApiTimeoutError',
			'KubernetesApiError',
			'KubernetesCredentialError',
			'KubernetesAlreadyGoneError',
			'KubernetesConflictError',
			'KubernetesPatchNotAppliedError',
		]) {
			const value = (root as Record<string, unknown>)[name]
			expect(typeof value, name).toBe('function')
			expect((value as { name: string }).name).toBe(name)
		}
		expect('createKubernetesClient' in root).toBe(false)
		const timeout = new root.KubernetesApiTimeoutError('DELETE', '/api/v1/x', 1000)
		expectTypeOf(timeout.verb).toEqualTypeOf<root.KubernetesHttpMethod>()
		expectTypeOf<root.KubernetesApiFailureTransport>().toEqualTypeOf<'connect' | 'status'>()
	})

	// No Kubernetes client library: yaml is the tier's one dependency; node-forge mints the egress
	// proxy's certificates (node:crypto cannot).
	it('declares yaml and node-forge as its only runtime dependencies', async () => {
		const { readFileSync } = await import('node:fs')
		const pkg = JSON.parse(
			readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8'),
		)
		expect(Object.keys(pkg.dependencies ?? {})).toEqual(['node-forge', 'yaml'])
	})
})
