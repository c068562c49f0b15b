/**
 * What the in-guest capture helper and the host's egress proxy agree on: where the bridge lives
 * inside the guest, the agent settings that turn the helper on, the fake-IP range its DNS stub
 * answers from, the name grammar both ends check, and the bounds of a request head on the bridge.
 */

/** Directory inside the guest holding the proxy's socket and, with credentials, the CA it trusts. */
export const EGRESS_BRIDGE_DIR = '/run/namzu-egress'
export const EGRESS_PROXY_SOCKET_NAME = 'proxy.sock'
export const EGRESS_CA_CERT_NAME = 'ca.pem'

/** The agent setting that starts the capture helper: the captured TCP ports, comma-separated. */
export const EGRESS_PORTS_VARIABLE = 'NAMZU_AGENT_EGRESS_PORTS'
/** The agent setting naming the proxy's socket inside the guest. */
export const EGRESS_SOCKET_VARIABLE = 'NAMZU_AGENT_EGRESS_SOCKET'

/** Ports captured when no rule names one: plain HTTP and TLS. */
export const DEFAULT_CAPTURED_PORTS: readonly number[] = [80, 443]

/** 198.18.0.0/15 (benchmarking, never routed): the fake addresses the guest's DNS stub hands out. */
export const FAKE_IP_FIRST = ((198 << 24) | (18 << 16)) >>> 0
export const FAKE_IP_PREFIX = 15
export const FAKE_IP_COUNT = 2 ** (32 - FAKE_IP_PREFIX)

/** Bridge request methods: open a tunnel, or ask whether a name may be resolved at all. */
export const CONNECT_METHOD = 'CONNECT'
export const RESOLVE_METHOD = 'RESOLVE'
/** A request head on the bridge is at most this long (line, headers and the blank line). */
export const MAX_BRIDGE_HEAD_BYTES = 8 * 1024

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/

/**
 * `name` lower-cased without a trailing dot when it is a DNS name both ends accept: labels of
 * `[A-Za-z0-9_-]` (no leading or trailing hyphen, 1–63 long), at most 253 in all, and a last label
 * that is not all digits (which would read as an IPv4 literal). Undefined otherwise.
 */
export function normalizeHostname(name: string): string | undefined {
	const lower = (name.endsWith('.') ? name.slice(0, -1) : name).toLowerCase()
	if (lower.length === 0 || lower.length > 253) return undefined
	const labels = lower.split('.')
	if (!labels.every((label) => LABEL.test(label))) return undefined
	const last = labels[labels.length - 1] ?? ''
	return /^[0-9]+$/.test(last) ? undefined : lower
}

/** Dotted quad of a 32-bit address. */
export function ipv4Text(value: number): string {
	return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.')
}

/** The 32-bit value of a dotted quad, or undefined (no leading zeros, each part ≤ 255). */
export function ipv4Value(text: string): number | undefined {
	const parts = text.split('.')
	if (parts.length !== 4) return undefined
	let value = 0
	for (const part of parts) {
		if (!/^(?:0|[1-9][0-9]{0,2})$/.test(part)) return undefined
		const byte = Number(part)
		if (byte > 255) return undefined
		value = value * 256 + byte
	}
	return value
}

/** Whether a dotted quad is one of the fake addresses. */
export function isFakeIp(text: string): boolean {
	const value = ipv4Value(text)
	return (
		value !== undefined &&
		value >>> (32 - FAKE_IP_PREFIX) === FAKE_IP_FIRST >>> (32 - FAKE_IP_PREFIX)
	)
}
