/**
 * The HTTP an exposure speaks itself (pure): where a request carries the token — header
 * `x-namzu-token`, `Authorization: Bearer`, the query's `token`, or the cookie a `?token=`
 * request sets — and the head with the token taken out, so the guest never sees it; and the
 * short answers it gives instead of forwarding (`401`, `503`, …).
 */
import { timingSafeEqual } from 'node:crypto'
import type { RequestHead } from '../egress/request-head.js'

export const EXPOSURE_TOKEN_HEADER = 'x-namzu-token'
export const EXPOSURE_TOKEN_QUERY = 'token'

/** The cookie a `?token=` request sets, one name per host port (cookies ignore ports). */
export function exposureCookieName(hostPort: number): string {
	return `namzu_token_${hostPort}`
}

/** A request that carried the token: its head without the token, and where the token was. */
export interface TokenProof {
	readonly head: RequestHead
	readonly fromQuery: boolean
	/** The `Set-Cookie` value that lets a browser's later requests in. */
	readonly cookie: string
}

function sameToken(presented: string, token: string): boolean {
	const a = Buffer.from(presented)
	const b = Buffer.from(token)
	return a.length === b.length && timingSafeEqual(a, b)
}

/** `target` without a `token=<token>` pair in its query (another `token` value is the app's). */
function withoutQueryToken(target: string, token: string): string | undefined {
	const mark = target.indexOf('?')
	if (mark < 0) return undefined
	const pairs = target.slice(mark + 1).split('&')
	const kept = pairs.filter((pair) => {
		const [name, value = ''] = pair.split('=', 2)
		return !(name === EXPOSURE_TOKEN_QUERY && sameToken(decodeQueryValue(value), token))
	})
	if (kept.length === pairs.length) return undefined
	const path = target.slice(0, mark)
	return kept.length > 0 ? `${path}?${kept.join('&')}` : path
}

function decodeQueryValue(value: string): string {
	try {
		return decodeURIComponent(value.replace(/\+/g, ' '))
	} catch {
		return value
	}
}

/** The `Cookie` value without the exposure's cookie, and whether it held the token. */
function withoutTokenCookie(value: string, name: string, token: string): [string, boolean] {
	let found = false
	const kept = value.split(';').filter((piece) => {
		const [key = '', content = ''] = piece.trim().split('=', 2)
		const ours = key === name && sameToken(content, token)
		found ||= ours
		return !ours
	})
	return [kept.map((piece) => piece.trim()).join('; '), found]
}

/** The request with the token taken out, or undefined when it does not carry it. */
export function tokenOfRequest(
	head: RequestHead,
	token: string,
	hostPort: number,
): TokenProof | undefined {
	const cookieName = exposureCookieName(hostPort)
	let proven = false
	const headers: (readonly [string, string])[] = []
	for (const [name, value] of head.headers) {
		const lower = name.toLowerCase()
		if (lower === EXPOSURE_TOKEN_HEADER) {
			proven ||= sameToken(value, token)
			continue
		}
		if (lower === 'authorization' && /^bearer\s+/i.test(value)) {
			const ours = sameToken(value.replace(/^bearer\s+/i, ''), token)
			proven ||= ours
			// Another bearer is the app's own credential: it goes through.
			if (ours) continue
		}
		if (lower === 'cookie') {
			const [rest, found] = withoutTokenCookie(value, cookieName, token)
			proven ||= found
			if (rest.length > 0) headers.push([name, rest])
			continue
		}
		headers.push([name, value])
	}
	const target = withoutQueryToken(head.target, token)
	if (!proven && target === undefined) return undefined
	return {
		head: { ...head, headers, target: target ?? head.target },
		fromQuery: target !== undefined,
		cookie: `${cookieName}=${token}; Path=/; HttpOnly; SameSite=Strict`,
	}
}

export interface HttpAnswer {
	readonly status: 400 | 401 | 408 | 502 | 503
	readonly text: string
}

const STATUS_TEXT: Readonly<Record<HttpAnswer['status'], string>> = {
	400: 'Bad Request',
	401: 'Unauthorized',
	408: 'Request Timeout',
	502: 'Bad Gateway',
	503: 'Service Unavailable',
}

/** A complete `connection: close` answer with a plain-text body. */
export function httpAnswer(answer: HttpAnswer): Buffer {
	const body = Buffer.from(`${answer.text}\n`, 'utf8')
	const lines = [
		`HTTP/1.1 ${answer.status} ${STATUS_TEXT[answer.status]}`,
		'content-type: text/plain; charset=utf-8',
		`content-length: ${body.length}`,
		'connection: close',
		...(answer.status === 401 ? ['www-authenticate: Bearer'] : []),
	]
	return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body])
}
