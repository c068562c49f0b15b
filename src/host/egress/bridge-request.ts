/**
 * What a guest asks of the proxy over the bridge socket, read from its request head: `CONNECT
 * host:port` (a tunnel) or `RESOLVE name` (may the DNS stub answer this name). The target is
 * validated here — a DNS name of the shared grammar, an IPv4 literal, or a bracketed IPv6 literal —
 * and nothing else about the request is trusted.
 */
import {
	CONNECT_METHOD,
	MAX_BRIDGE_HEAD_BYTES,
	normalizeHostname,
	RESOLVE_METHOD,
} from '../../wire/egress-bridge.js'
import { type IpAddress, parseIpAddress } from './ip-address.js'
import { type RequestHead, type RequestHeadRefusal, readRequestHead } from './request-head.js'

export type BridgeTarget =
	| { readonly kind: 'name'; readonly name: string }
	| { readonly kind: 'address'; readonly address: IpAddress; readonly text: string }

export type BridgeRequest =
	| {
			readonly kind: 'connect'
			readonly target: BridgeTarget
			readonly port: number
			readonly length: number
	  }
	| { readonly kind: 'resolve'; readonly name: string; readonly length: number }

/** Why a bridge request was refused (kebab-case, reported as `bad-request:<reason>`). */
export type BridgeRequestRefusal =
	| RequestHeadRefusal
	| 'method-refused'
	| 'connect-target-invalid'
	| 'connect-host-invalid'
	| 'resolve-name-invalid'

export type BridgeRequestRead =
	| { readonly kind: 'incomplete' }
	| { readonly kind: 'invalid'; readonly reason: BridgeRequestRefusal }
	| { readonly kind: 'request'; readonly request: BridgeRequest }

function hostTarget(host: string): BridgeTarget | undefined {
	if (host.startsWith('[') && host.endsWith(']')) {
		const text = host.slice(1, -1)
		const address = text.includes(':') ? parseIpAddress(text) : undefined
		return address === undefined ? undefined : { kind: 'address', address, text }
	}
	if (/^[0-9.]+$/.test(host)) {
		const address = parseIpAddress(host)
		return address === undefined ? undefined : { kind: 'address', address, text: host }
	}
	const name = normalizeHostname(host)
	return name === undefined ? undefined : { kind: 'name', name }
}

/** What a complete bridge head asks (read with `RequestHeadReader` at `MAX_BRIDGE_HEAD_BYTES`). */
export function bridgeRequestOf(
	head: RequestHead,
): Exclude<BridgeRequestRead, { kind: 'incomplete' }> {
	const { method, target, length } = head
	if (method === RESOLVE_METHOD) {
		const name = normalizeHostname(target)
		if (name === undefined) return { kind: 'invalid', reason: 'resolve-name-invalid' }
		return { kind: 'request', request: { kind: 'resolve', name, length } }
	}
	if (method !== CONNECT_METHOD) return { kind: 'invalid', reason: 'method-refused' }
	const colon = target.lastIndexOf(':')
	const portText = target.slice(colon + 1)
	if (colon <= 0 || !/^[1-9][0-9]{0,4}$/.test(portText) || Number(portText) > 65_535) {
		return { kind: 'invalid', reason: 'connect-target-invalid' }
	}
	const host = hostTarget(target.slice(0, colon))
	if (host === undefined) return { kind: 'invalid', reason: 'connect-host-invalid' }
	return {
		kind: 'request',
		request: { kind: 'connect', target: host, port: Number(portText), length },
	}
}

/** The bridge request at the start of `bytes`, read in one piece. */
export function readBridgeRequest(bytes: Buffer): BridgeRequestRead {
	const read = readRequestHead(bytes, MAX_BRIDGE_HEAD_BYTES)
	return read.kind === 'head' ? bridgeRequestOf(read.head) : read
}
