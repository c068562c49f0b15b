import { describe, expect, it } from 'vitest'
import { faultStatusBody, ruleMatches } from './api-fault-proxy.js'
import { tokenFileLine } from './credentials.js'
import { accessFromKubeconfigJson, renderKubeconfig } from './kubeconfig.js'
import { routeVerdict } from './pod-agent.js'

describe('fault rules', () => {
	it.each([
		[undefined, 'GET', '/api/v1/pods', true],
		[{ method: 'post' }, 'POST', '/x', true],
		[{ method: 'POST' }, 'GET', '/x', false],
		[
			{ pathIncludes: '/sandboxclaims' },
			'PATCH',
			'/apis/e/v1beta1/namespaces/a/sandboxclaims/c',
			true,
		],
		[
			{ pathIncludes: '/sandboxclaims' },
			'PATCH',
			'/apis/e/v1beta1/namespaces/a/sandboxes/c',
			false,
		],
		[{ method: 'PATCH', pathIncludes: '/pods' }, 'PATCH', '/api/v1/pods', true],
	])('match %j against %s %s → %s', (match, method, path, expected) => {
		expect(ruleMatches(match, method, path)).toBe(expected)
	})

	it('answers with the Status body the API server itself uses, with Retry-After details', () => {
		expect(faultStatusBody(429, 2)).toEqual({
			kind: 'Status',
			apiVersion: 'v1',
			metadata: {},
			status: 'Failure',
			message: 'injected fault: HTTP 429',
			reason: 'TooManyRequests',
			details: { retryAfterSeconds: 2 },
			code: 429,
		})
		expect(faultStatusBody(503)).toMatchObject({ reason: 'ServiceUnavailable', code: 503 })
		expect(faultStatusBody(502)).toMatchObject({ reason: 'InternalError', code: 502 })
	})
})

describe('kubeconfig', () => {
	const access = { server: 'https://127.0.0.1:6443', token: 'abc', caPem: '-----BEGIN CERT-----\n' }

	it('round-trips server, token and CA through the JSON form kubectl prints', () => {
		const text = renderKubeconfig(access, 'namzu-test')
		expect(text).toContain('server: "https://127.0.0.1:6443"')
		expect(text).toContain('current-context: "namzu-test"')
		const json = {
			clusters: [
				{
					name: 'namzu-test',
					cluster: {
						server: access.server,
						'certificate-authority-data': Buffer.from(access.caPem).toString('base64'),
					},
				},
			],
			users: [{ name: 'namzu-test', user: { token: 'abc' } }],
		}
		expect(accessFromKubeconfigJson(json)).toEqual(access)
	})

	it('refuses a user without a bearer token, saying which kinds are supported', () => {
		const json = {
			clusters: [{ cluster: { server: 'https://x' } }],
			users: [{ user: { exec: { command: 'gke-gcloud-auth-plugin' } } }],
		}
		expect(() => accessFromKubeconfigJson(json)).toThrow(/no bearer token/)
	})

	it('writes the static token file line with quoted groups', () => {
		expect(tokenFileLine('t0k', 'admin', 'uid-1', ['system:masters', 'x'])).toBe(
			't0k,admin,uid-1,"system:masters,x"',
		)
	})
})

describe('the route check before dialing a pod address', () => {
	const uplink = [{ dst: 'default', gateway: '192.0.2.1', dev: 'eth0' }]

	it.each([
		[[{ dst: '10.244.1.5', dev: 'nzbr0' }], true, ''],
		[[{ dst: '10.244.1.5', gateway: '192.0.2.1', dev: 'eth0' }], false, 'gateway'],
		[[{ dst: '10.244.1.5', dev: 'eth0' }], false, 'default-route device'],
		[[{ dst: '10.244.1.5', type: 'unreachable' }], false, 'unreachable'],
		[[], false, 'no route'],
	])('route %j → ok=%s', (lookup, ok, why) => {
		const verdict = routeVerdict(lookup, uplink)
		expect(verdict.ok).toBe(ok)
		if (!verdict.ok) expect(verdict.why).toContain(why)
	})
})
