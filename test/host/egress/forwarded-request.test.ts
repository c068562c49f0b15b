import { describe, expect, it } from 'vitest'
import type { BridgeTarget } from '../../../src/host/egress/bridge-request.js'
import {
	authorityOf,
	forwardedRequest,
	type TunnelContext,
} from '../../../src/host/egress/forwarded-request.js'
import { readRequestHead } from '../../../src/host/egress/request-head.js'
import { ip } from './egress-test-kit.js'

const api: BridgeTarget = { kind: 'name', name: 'api.test' }
const plain: TunnelContext = { target: api, port: 80 }
const credentialed: TunnelContext = {
	target: { kind: 'name', name: 'cred.test' },
	port: 443,
	credentials: { Authorization: 'Bearer s3cret' },
}
const address: TunnelContext = {
	target: { kind: 'address', address: ip('203.0.113.5'), text: '203.0.113.5' },
	port: 80,
}

function verdict(text: string, context: TunnelContext = plain) {
	const read = readRequestHead(Buffer.from(text, 'latin1'), 65_536)
	if (read.kind !== 'head') throw new Error(`not a head: ${JSON.stringify(read)}`)
	return forwardedRequest(read.head, context)
}

/** The head that would go upstream, or `layer:reason`. */
function outcome(text: string, context: TunnelContext = plain): string {
	const result = verdict(text, context)
	return result.allowed ? result.head.toString('latin1') : `${result.layer}:${result.reason}`
}

describe('which requests go through a tunnel, and as what', () => {
	it.each([
		[
			'an origin-form GET',
			'GET /a?b=1 HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'GET /a?b=1 HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'a Host with the tunnel port and a trailing dot',
			'GET / HTTP/1.1\r\nHost: API.test.:80\r\n\r\n',
			'GET / HTTP/1.1\r\nHost: API.test.:80\r\nConnection: close\r\n\r\n',
		],
		[
			'an absolute target naming the Host, sent origin-form',
			'GET http://api.test/x?y HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'GET /x?y HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'an absolute target without a path, with the tunnel port',
			'GET HTTP://api.test:80 HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'GET / HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'an absolute target with a query and no path',
			'GET http://api.test?q HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'GET /?q HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'OPTIONS *',
			'OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'OPTIONS * HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'an HTTP/1.0 request with Host',
			'GET / HTTP/1.0\r\nHost: api.test\r\n\r\n',
			'GET / HTTP/1.0\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
		[
			'a WebSocket upgrade, which keeps its token',
			'GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
			'GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n\r\n',
		],
		[
			// A valid origin-form path (empty first segment): the Host routes it, as for any path.
			'a path starting with two slashes, as sent',
			'GET //evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'GET //evil.test/ HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n',
		],
	])('forwards %s', (_case, text, expected) => {
		expect(outcome(text)).toBe(expected)
	})

	it.each([
		['no Host', 'GET / HTTP/1.1\r\n\r\n', 'host:host-missing'],
		['no Host in HTTP/1.0', 'GET / HTTP/1.0\r\n\r\n', 'host:host-missing'],
		[
			'two Hosts',
			'GET / HTTP/1.1\r\nHost: api.test\r\nHost: evil.test\r\n\r\n',
			'host:host-repeated',
		],
		[
			'two Hosts, the same',
			'GET / HTTP/1.1\r\nHost: api.test\r\nhost: api.test\r\n\r\n',
			'host:host-repeated',
		],
		['a Host for another site', 'GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n', 'host:host-mismatch'],
		[
			'a Host with another port',
			'GET / HTTP/1.1\r\nHost: api.test:8080\r\n\r\n',
			'host:host-port-mismatch',
		],
		['a Host with userinfo', 'GET / HTTP/1.1\r\nHost: x@api.test\r\n\r\n', 'host:host-invalid'],
		['a Host list', 'GET / HTTP/1.1\r\nHost: api.test, evil.test\r\n\r\n', 'host:host-invalid'],
		['an empty Host', 'GET / HTTP/1.1\r\nHost:\r\n\r\n', 'host:host-invalid'],
		[
			'an absolute target for another site',
			'GET http://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'host:target-authority-mismatch',
		],
		[
			'an https absolute target for another site',
			'GET https://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'host:target-authority-mismatch',
		],
		[
			'an absolute target on another port',
			'GET http://api.test:8080/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'host:target-authority-mismatch',
		],
		[
			'an absolute target with userinfo',
			'GET http://api.test@evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'host:target-authority-invalid',
		],
		[
			'another scheme',
			'GET ftp://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'http:target-form-refused',
		],
		[
			'an authority-form target',
			'GET api.test:80 HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'http:target-form-refused',
		],
		[
			'asterisk-form but for OPTIONS',
			'GET * HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'http:target-form-refused',
		],
		[
			'CONNECT inside a tunnel',
			'CONNECT evil.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n',
			'http:method-connect-refused',
		],
		[
			'an h2c upgrade',
			'GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n',
			'http:h2c-refused',
		],
		[
			'h2c among upgrade tokens',
			'GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket, H2C\r\nConnection: Upgrade\r\n\r\n',
			'http:h2c-refused',
		],
		[
			'HTTP2-Settings alone',
			'GET / HTTP/1.1\r\nHost: api.test\r\nHTTP2-Settings: AAMA\r\n\r\n',
			'http:h2c-refused',
		],
		[
			'Content-Length beside Transfer-Encoding',
			'POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n',
			'http:http-body-framing-invalid',
		],
		[
			'two different Content-Lengths',
			'POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n',
			'http:http-body-framing-invalid',
		],
		[
			'a coding other than chunked',
			'POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n',
			'http:http-body-framing-invalid',
		],
		[
			'Transfer-Encoding in HTTP/1.0',
			'POST / HTTP/1.0\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n',
			'http:http-body-framing-invalid',
		],
	])('refuses %s', (_case, text, expected) => {
		expect(outcome(text)).toBe(expected)
	})
})

describe('credentials', () => {
	it('are set on a request whose Host and absolute target name their host, replacing the guest’s', () => {
		expect(
			outcome(
				'GET https://cred.test/v1 HTTP/1.1\r\nHost: cred.test\r\nauthorization: guess\r\n\r\n',
				credentialed,
			),
		).toBe(
			'GET /v1 HTTP/1.1\r\nHost: cred.test\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n',
		)
	})

	it.each([
		[
			'an absolute target for another site',
			'GET http://evil.test/ HTTP/1.1\r\nHost: cred.test\r\n\r\n',
		],
		['an https one', 'GET https://evil.test/ HTTP/1.1\r\nHost: cred.test\r\n\r\n'],
		['a Host for another site', 'GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n'],
		['a second Host', 'GET / HTTP/1.1\r\nHost: cred.test\r\nHost: evil.test\r\n\r\n'],
		['no Host', 'GET / HTTP/1.1\r\n\r\n'],
		[
			'an upgrade',
			'GET / HTTP/1.1\r\nHost: cred.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
		],
		['TRACE, which echoes the head back', 'TRACE / HTTP/1.1\r\nHost: cred.test\r\n\r\n'],
	])('are never sent with %s: the request is refused', (_case, text) => {
		const result = verdict(text, credentialed)
		expect(result.allowed).toBe(false)
	})
})

describe('an address target (a CIDR rule)', () => {
	it('takes any Host, but an absolute target only naming that Host', () => {
		expect(outcome('GET / HTTP/1.1\r\nHost: anything.test\r\n\r\n', address)).toContain(
			'Host: anything.test',
		)
		expect(outcome('GET http://evil.test/ HTTP/1.1\r\nHost: anything.test\r\n\r\n', address)).toBe(
			'host:target-authority-mismatch',
		)
		expect(outcome('GET / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n', address)).toContain(
			'GET / HTTP/1.1',
		)
	})
})

describe('authorities', () => {
	it.each([
		['api.test', { name: 'api.test' }],
		['API.Test.:443', { name: 'api.test', port: 443 }],
		['[2001:DB8::1]:8080', { name: '[2001:db8::1]', port: 8080 }],
		['203.0.113.5', { name: '203.0.113.5' }],
		['a.test:0', undefined],
		['a.test:65536', undefined],
		['a.test:', undefined],
		['a b', undefined],
		['u@a.test', undefined],
		['', undefined],
	])('%j → %j', (text, expected) => {
		expect(authorityOf(text)).toEqual(expected)
	})
})
