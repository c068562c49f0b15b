/**
 * Whether a parsed request head may be forwarded through a tunnel, and the head that is: pure.
 * Everything an upstream could route by must name the tunnel's target — exactly one `Host` (its
 * port, when sent, the tunnel's), and an absolute-form target only when its authority equals that
 * `Host`; the head that goes out is origin-form. A method that would make the upstream a proxy
 * (`CONNECT`) is refused, as are an `h2c` upgrade (the upstream would then speak HTTP/2 this
 * proxy cannot read) and body framing that two parsers could read differently. With credentials,
 * no upgrade and no `TRACE` (which echoes the head, the credential included, back to the guest).
 */
import type { BridgeTarget } from './bridge-request.js'
import type { EgressLayer } from './egress-decision.js'
import { isUpgradeRequest } from './http-upgrade.js'
import { type BodyFraming, bodyFramingOf } from './request-body-framing.js'
import { headerValues, type RequestHead, rewriteRequestHead } from './request-head.js'

export interface TunnelContext {
	/** What the tunnel was opened to (a name or an address a CIDR rule allowed). */
	readonly target: BridgeTarget
	readonly port: number
	/** Header fields set on the request: the target's credentials. */
	readonly credentials?: Readonly<Record<string, string>>
}

export type ForwardVerdict =
	| {
			readonly allowed: true
			/** The head to send upstream. */
			readonly head: Buffer
			readonly framing: BodyFraming
			/** A protocol switch (WebSocket) was asked: what follows waits for the answer. */
			readonly upgrade: boolean
	  }
	| { readonly allowed: false; readonly layer: EgressLayer; readonly reason: string }

interface Authority {
	/** Lower case, no trailing dot; an IPv6 literal keeps its brackets. */
	readonly name: string
	readonly port?: number
}

type Refusal = Extract<ForwardVerdict, { allowed: false }>

const refuse = (layer: EgressLayer, reason: string): Refusal => ({ allowed: false, layer, reason })
const AUTHORITY = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?$/
const ABSOLUTE = /^https?:\/\//i

/** `host[:port]` as a Host field or an absolute target's authority carries it. */
export function authorityOf(text: string): Authority | undefined {
	const match = AUTHORITY.exec(text)
	if (!match?.[1]) return undefined
	const port = match[2] === undefined ? undefined : Number(match[2])
	if (port !== undefined && (port < 1 || port > 65_535)) return undefined
	const name = match[1].toLowerCase().replace(/\.$/, '')
	return port === undefined ? { name } : { name, port }
}

function hostOf(head: RequestHead, context: TunnelContext): Authority | Refusal {
	const values = headerValues(head, 'host')
	if (values.length === 0) return refuse('host', 'host-missing')
	if (values.length > 1) return refuse('host', 'host-repeated')
	const host = authorityOf(values[0] ?? '')
	if (host === undefined) return refuse('host', 'host-invalid')
	// An address target is reached at that address whatever name the request gives it.
	if (context.target.kind === 'name' && host.name !== context.target.name) {
		return refuse('host', 'host-mismatch')
	}
	if (host.port !== undefined && host.port !== context.port) {
		return refuse('host', 'host-port-mismatch')
	}
	return host
}

/** The origin-form target to send: the target as sent, or an absolute one's path. */
function originTarget(
	head: RequestHead,
	host: Authority,
	context: TunnelContext,
): string | Refusal {
	const { method, target } = head
	if (target.startsWith('/')) return target
	if (target === '*') return method === 'OPTIONS' ? target : refuse('http', 'target-form-refused')
	if (!ABSOLUTE.test(target)) return refuse('http', 'target-form-refused')
	const rest = target.slice(target.indexOf('//') + 2)
	const end = rest.search(/[/?#]/)
	const authority = authorityOf(end < 0 ? rest : rest.slice(0, end))
	if (authority === undefined) return refuse('host', 'target-authority-invalid')
	const port = authority.port ?? context.port
	if (authority.name !== host.name || port !== context.port) {
		return refuse('host', 'target-authority-mismatch')
	}
	const path = end < 0 ? '' : rest.slice(end)
	if (path.startsWith('#')) return refuse('http', 'target-form-refused')
	return path.startsWith('/') ? path : `/${path}`
}

function upgradeOf(head: RequestHead, context: TunnelContext): boolean | Refusal {
	const asked = headerValues(head, 'upgrade').flatMap((value) => value.split(','))
	const h2c =
		asked.some((token) => token.trim().toLowerCase() === 'h2c') ||
		headerValues(head, 'http2-settings').length > 0
	if (h2c) return refuse('http', 'h2c-refused')
	if (asked.length === 0) return false
	if (context.credentials !== undefined) return refuse('http', 'upgrade-refused')
	return isUpgradeRequest(head)
}

/** Whether `head` may go through the tunnel described by `context`, and as what. */
export function forwardedRequest(head: RequestHead, context: TunnelContext): ForwardVerdict {
	if (head.method === 'CONNECT') return refuse('http', 'method-connect-refused')
	if (head.method === 'TRACE' && context.credentials !== undefined) {
		return refuse('http', 'trace-refused')
	}
	const host = hostOf(head, context)
	if ('allowed' in host) return host
	const target = originTarget(head, host, context)
	if (typeof target !== 'string') return target
	const upgrade = upgradeOf(head, context)
	if (typeof upgrade !== 'boolean') return upgrade
	const framing = bodyFramingOf(head)
	if (framing.kind === 'invalid') return refuse('http', 'http-body-framing-invalid')
	// One request per tunnel: the upstream is told, and the proxy forwards nothing after it.
	const replace = {
		...context.credentials,
		Connection: upgrade ? 'Upgrade, close' : 'close',
	}
	return {
		allowed: true,
		head: rewriteRequestHead(head, replace, target),
		framing: framing.framing,
		upgrade,
	}
}
