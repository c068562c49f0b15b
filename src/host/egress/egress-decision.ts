/**
 * The proxy's decisions as pure functions over the rules: may a name be resolved (the DNS layer),
 * may a tunnel be opened to a target (CONNECT; a raw `tcp://` rule says its bytes pass unread),
 * which resolved address may be dialed (the IP layer: the private-range deny set unless a CIDR
 * rule names the address), and does a TLS client's SNI agree with the name it connected to. What
 * an HTTP request must be (the `http` and `host` layers) is `forwarded-request.ts`.
 */
import { type EgressRule, matchAddress, matchName, nameAllowedOnAnyPort } from './allowed-hosts.js'
import type { BridgeTarget } from './bridge-request.js'
import type { IpAddress } from './ip-address.js'
import { deniedRangeOf } from './private-ranges.js'

/**
 * Where a verdict was reached: DNS stub, tunnel request (and the tunnel caps), dialed address, TLS
 * SNI, the HTTP request's form (parsed strictly), the names an HTTP request routes by.
 */
export type EgressLayer = 'dns' | 'connect' | 'ip' | 'sni' | 'http' | 'host'

/** What each layer enforces, for reports (`describeLocalIsolation`, the README). */
export const EGRESS_LAYER_ENFORCEMENT: Readonly<Record<EgressLayer, string>> = {
	dns: "the guest's DNS stub answers only names some rule allows (the proxy is asked), with fake addresses; other names get NXDOMAIN",
	connect:
		'every TCP connect is captured; the proxy matches the connected name or address and port against the rules (name, *.suffix, CIDR, :port, tcp:// for raw bytes), within a per-sandbox and a host-wide cap on open tunnels',
	ip: 'the proxy resolves a name itself and dials only addresses outside the private-range deny set (loopback, RFC 1918, link-local and metadata, 100.64/10, fc00::/7, the host, and any of them carried in NAT64, 6to4, Teredo or other IPv6 forms) unless a CIDR rule names them',
	sni: "a TLS ClientHello's server name must equal the connected name",
	http: "on every port but a tcp:// rule's, the first bytes must be TLS or one HTTP/1.0 or 1.1 request head read strictly (RFC 9112: CRLF only, no leading empty line, upper-case method, no h2c, unambiguous body framing); anything else is refused, never passed on",
	host: 'an HTTP request must carry exactly one Host naming the connected host (and an absolute target only with that authority, sent on origin-form); one request per tunnel; credentials only on such a request',
}

/** One verdict of the egress proxy, as `onEgressDecision` sees it. */
export interface EgressDecision {
	/** The name (or IP literal) the guest asked for. */
	readonly host: string
	/** 0 for a DNS question. */
	readonly port: number
	readonly verdict: 'allow' | 'deny'
	readonly layer: EgressLayer
	/** The `allowedHosts` entry that allowed it. */
	readonly rule?: string
	/** Kebab-case: `allowed`, `no-rule`, `private-range:loopback`, `sni-mismatch`, … */
	readonly reason: string
	/** The address the proxy dialed (or refused to), when it got that far. */
	readonly address?: string
}

export type Verdict =
	| { readonly allowed: true; readonly rule?: EgressRule }
	| { readonly allowed: false; readonly reason: string }

/** Whether the DNS stub may answer `name` at all (some rule names it, on any port). */
export function decideResolve(rules: readonly EgressRule[], name: string): Verdict {
	return nameAllowedOnAnyPort(rules, name)
		? { allowed: true }
		: { allowed: false, reason: 'no-rule' }
}

export function targetText(target: BridgeTarget): string {
	return target.kind === 'name' ? target.name : target.text
}

/**
 * Whether a tunnel to `target:port` may be opened: a name by its rules, an address by CIDR. The
 * rule is a raw one when any allowing rule is (`rule.raw`: its bytes pass unread).
 */
export function decideConnect(
	rules: readonly EgressRule[],
	target: BridgeTarget,
	port: number,
): Verdict {
	const rule =
		target.kind === 'name'
			? matchName(rules, target.name, port)
			: matchAddress(rules, target.address, port)
	return rule === undefined ? { allowed: false, reason: 'no-rule' } : { allowed: true, rule }
}

export type AddressChoice =
	| { readonly allowed: true; readonly address: IpAddress; readonly rule?: EgressRule }
	| { readonly allowed: false; readonly reason: string; readonly address?: IpAddress }

/**
 * The first of `addresses` (the proxy's own resolution) that may be dialed on `port`: a public one,
 * or one a CIDR rule covers. None ⇒ refused, naming the range of the first.
 */
export function chooseAddress(
	rules: readonly EgressRule[],
	hostAddresses: readonly IpAddress[],
	addresses: readonly IpAddress[],
	port: number,
): AddressChoice {
	let refused: AddressChoice | undefined
	for (const address of addresses) {
		const range = deniedRangeOf(address, hostAddresses)
		if (range === undefined) return { allowed: true, address }
		const rule = matchAddress(rules, address, port)
		if (rule !== undefined) return { allowed: true, address, rule }
		refused ??= { allowed: false, reason: `private-range:${range}`, address }
	}
	return refused ?? { allowed: false, reason: 'unresolved' }
}

/**
 * Whether a TLS client's server name agrees with the tunnel's target: for a name it must be sent
 * and equal; an address target (allowed by CIDR) is reached at that address whatever it says.
 */
export function decideServerName(target: BridgeTarget, sent: string | undefined): Verdict {
	if (target.kind === 'address') return { allowed: true }
	if (sent === undefined) return { allowed: false, reason: 'sni-absent' }
	const name = sent.toLowerCase().replace(/\.$/, '')
	return name === target.name ? { allowed: true } : { allowed: false, reason: 'sni-mismatch' }
}
