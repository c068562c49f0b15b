/**
 * The grammar of `allowedHosts` entries and the matcher over them. An entry is one of
 *
 * - `host` — exactly that DNS name (`api.example.com`);
 * - `*.suffix` — any name strictly below the suffix (`*.example.com` matches `a.example.com` and
 *   `a.b.example.com`, not `example.com`);
 * - an IP literal or a CIDR block (`203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`; IPv6 in
 *   brackets when a port follows: `[2001:db8::1]:443`);
 *
 * each optionally followed by `:port` (1–65535). Without a port an entry allows 80 and 443, the
 * ports captured by default; every port an entry names is captured too. Names are matched
 * case-insensitively without a trailing dot. A CIDR rule is also the only way to reach an address in
 * the private-range deny set (`private-ranges.ts`).
 *
 * What may cross such a tunnel is HTTP/1.x (parsed, one request) or TLS (its SNI checked): any
 * other bytes are refused. `tcp://entry:port` — the port required — allows raw TCP on that one
 * port instead (a database, SSH, HTTP/2 in clear): the bytes pass as sent, unread, so whatever
 * server answers there is reached however the client names it.
 */
import { SandboxConfigError } from '../../contract/errors.js'
import { DEFAULT_CAPTURED_PORTS, normalizeHostname } from '../../wire/egress-bridge.js'
import { type CidrBlock, cidrContains, type IpAddress, parseCidr } from './ip-address.js'

/** What every rule carries besides its target: the port, raw TCP, the entry as written. */
interface RuleBase {
	readonly port?: number
	/** `tcp://`: bytes pass unread on this port (never without a port). */
	readonly raw?: true
	readonly entry: string
}

export type EgressRule =
	| (RuleBase & { readonly kind: 'name'; readonly name: string })
	| (RuleBase & { readonly kind: 'suffix'; readonly suffix: string })
	| (RuleBase & { readonly kind: 'cidr'; readonly block: CidrBlock })

/** The prefix of a raw TCP rule. */
export const RAW_RULE_PREFIX = 'tcp://'

/** More entries than this is a mistake (or an attack on the matcher), not a policy. */
export const MAX_ALLOWED_HOSTS = 4096
const MAX_ENTRY_LENGTH = 300

type Parsed = EgressRule | string

/**
 * The name a sandbox dials to reach a service on the host's loopback, on a port `hostPorts`
 * names; the proxy maps it to 127.0.0.1 itself (no DNS).
 */
export const HOST_SERVICES_NAME = 'host.namzu.internal'
const HOST_LOOPBACK = '127.0.0.1'

/** Inside the sandbox 127.0.0.1 is its own loopback: such an entry could never be used. */
const LOOPBACK_ENTRY = `names loopback, which inside the sandbox is the sandbox's own: to reach a service on the host's loopback list its port in hostPorts (e.g. hostPorts: [11434]) and connect to ${HOST_SERVICES_NAME}:<port>`

const LOOPBACK_BLOCKS = ['127.0.0.0/8', '::1/128'].flatMap((text) => parseCidr(text) ?? [])

function isLoopbackBlock(block: CidrBlock): boolean {
	return LOOPBACK_BLOCKS.some(
		(loopback) =>
			block.prefix >= loopback.prefix &&
			cidrContains(loopback, { family: block.family, value: block.network }),
	)
}

function parsePort(text: string): number | string {
	if (!/^[1-9][0-9]{0,4}$/.test(text) || Number(text) > 65_535) {
		return `port ${JSON.stringify(text)} is not 1-65535`
	}
	return Number(text)
}

function withPort<T extends object>(rule: T, port: number | undefined): T & { port?: number } {
	return port === undefined ? rule : { ...rule, port }
}

function splitPort(entry: string): { body: string; port?: number } | string {
	if (entry.startsWith('[')) {
		const close = entry.indexOf(']')
		if (close < 0) return 'an opening [ without ]'
		const rest = entry.slice(close + 1)
		if (rest === '') return { body: entry.slice(1, close) }
		if (!rest.startsWith(':')) return `unexpected ${JSON.stringify(rest)} after ]`
		const port = parsePort(rest.slice(1))
		return typeof port === 'string' ? port : { body: entry.slice(1, close), port }
	}
	const colons = entry.split(':').length - 1
	// More than one colon without brackets: an IPv6 literal or block, never with a port.
	if (colons !== 1) return { body: entry }
	const at = entry.indexOf(':')
	const port = parsePort(entry.slice(at + 1))
	return typeof port === 'string' ? port : { body: entry.slice(0, at), port }
}

function parseEntry(entry: string): Parsed {
	if (entry.length === 0) return 'is empty'
	if (entry.length > MAX_ENTRY_LENGTH) return `is longer than ${MAX_ENTRY_LENGTH} characters`
	if (!entry.toLowerCase().startsWith(RAW_RULE_PREFIX)) {
		if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) {
			return `has a scheme other than ${RAW_RULE_PREFIX} (an entry without one allows HTTP and TLS)`
		}
		return parseTarget(entry, entry)
	}
	const rule = parseTarget(entry.slice(RAW_RULE_PREFIX.length), entry)
	if (typeof rule === 'string') return rule
	if (rule.port === undefined) return `names no port: a ${RAW_RULE_PREFIX} entry allows one port`
	return { ...rule, raw: true }
}

function parseTarget(text: string, entry: string): Parsed {
	const split = splitPort(text)
	if (typeof split === 'string') return split
	const { body, port } = split
	if (/^[0-9.]+(?:\/[0-9]+)?$/.test(body) || body.includes(':')) {
		const block = parseCidr(body)
		if (block === undefined) {
			return 'is not a valid IP address or CIDR block (host bits of a block must be zero)'
		}
		if (isLoopbackBlock(block)) return LOOPBACK_ENTRY
		return withPort({ kind: 'cidr' as const, block, entry }, port)
	}
	if (body.startsWith('*.')) {
		const suffix = normalizeHostname(body.slice(2))
		if (suffix === undefined) return 'has a suffix that is not a valid DNS name'
		return withPort({ kind: 'suffix' as const, suffix, entry }, port)
	}
	const name = normalizeHostname(body)
	if (name === 'localhost' || name?.endsWith('.localhost')) return LOOPBACK_ENTRY
	if (name === undefined) {
		return 'is not a host name (labels of A-Z a-z 0-9 _ -), *.suffix, IP address or CIDR block'
	}
	return withPort({ kind: 'name' as const, name, entry }, port)
}

/**
 * The rules of an `allowedHosts` list, in order; refuses the first malformed entry by its index
 * (`egress.allowedHosts[2]`), so nothing half-parsed is ever enforced.
 */
export function parseAllowedHosts(value: unknown, field = 'egress.allowedHosts'): EgressRule[] {
	if (!Array.isArray(value)) {
		throw new SandboxConfigError(field, 'must be an array of strings', {
			expected: 'string[]',
			received: value === null ? 'null' : typeof value,
		})
	}
	if (value.length > MAX_ALLOWED_HOSTS) {
		throw new SandboxConfigError(field, `has ${value.length} entries; at most ${MAX_ALLOWED_HOSTS}`)
	}
	return value.map((entry: unknown, index) => {
		if (typeof entry !== 'string') {
			throw new SandboxConfigError(`${field}[${index}]`, 'must be a string', {
				expected: 'string',
				received: entry === null ? 'null' : typeof entry,
			})
		}
		const parsed = parseEntry(entry.trim())
		if (typeof parsed === 'string') {
			throw new SandboxConfigError(`${field}[${index}]`, `${JSON.stringify(entry)} ${parsed}`)
		}
		return parsed
	})
}

function portMatches(rule: EgressRule, port: number): boolean {
	return rule.port === undefined ? DEFAULT_CAPTURED_PORTS.includes(port) : rule.port === port
}

/** Whether `rule` (a name or suffix) allows `name` (normalized) on `port`. */
function nameRuleAllows(rule: EgressRule, name: string, port: number): boolean {
	if (!portMatches(rule, port)) return false
	if (rule.kind === 'name') return rule.name === name
	if (rule.kind === 'suffix') return name.endsWith(`.${rule.suffix}`)
	return false
}

/** The name or suffix rule allowing `name` (normalized) on `port`: a raw one first, else the first. */
export function matchName(
	rules: readonly EgressRule[],
	name: string,
	port: number,
): EgressRule | undefined {
	return preferRaw(rules.filter((rule) => nameRuleAllows(rule, name, port)))
}

/** A raw rule among those allowing a tunnel decides it: its port carries anything. */
function preferRaw(allowing: readonly EgressRule[]): EgressRule | undefined {
	return allowing.find((rule) => rule.raw) ?? allowing[0]
}

/** Whether some name or suffix rule allows `name` on any port (what the DNS stub may answer). */
export function nameAllowedOnAnyPort(rules: readonly EgressRule[], name: string): boolean {
	return rules.some(
		(rule) =>
			(rule.kind === 'name' && rule.name === name) ||
			(rule.kind === 'suffix' && name.endsWith(`.${rule.suffix}`)),
	)
}

/** The CIDR rule covering `address` on `port`: a raw one first, else the first. */
export function matchAddress(
	rules: readonly EgressRule[],
	address: IpAddress,
	port: number,
): EgressRule | undefined {
	return preferRaw(
		rules.filter(
			(rule) =>
				rule.kind === 'cidr' && portMatches(rule, port) && cidrContains(rule.block, address),
		),
	)
}

/** The TCP ports the guest's capture helper listens on: 80, 443 and every port a rule names. */
export function capturedPorts(rules: readonly EgressRule[]): number[] {
	const ports = new Set(DEFAULT_CAPTURED_PORTS)
	for (const rule of rules) if (rule.port !== undefined) ports.add(rule.port)
	return [...ports].sort((a, b) => a - b)
}

/**
 * The rules `hostPorts` stands for, port by port: `HOST_SERVICES_NAME` on that port (raw TCP),
 * and the host's 127.0.0.1 on that port only (a CIDR rule is what lets the proxy dial into the
 * private-range deny set). Refuses a port that is not 1-65535, naming `hostPorts[i]`.
 */
export function hostPortRules(value: unknown, field = 'egress.hostPorts'): EgressRule[] {
	if (value === undefined) return []
	if (!Array.isArray(value)) {
		throw new SandboxConfigError(field, 'must be an array of port numbers', {
			expected: 'number[]',
			received: value === null ? 'null' : typeof value,
		})
	}
	const block = parseCidr(`${HOST_LOOPBACK}/32`)
	if (block === undefined) throw new Error('unreachable: the loopback block parses')
	return value.flatMap((port: unknown, index): EgressRule[] => {
		if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
			throw new SandboxConfigError(`${field}[${index}]`, 'must be a port number 1-65535', {
				expected: 'integer 1-65535',
				received: typeof port === 'number' ? String(port) : typeof port,
			})
		}
		const entry = `hostPorts:${port}`
		return [
			{ kind: 'name', name: HOST_SERVICES_NAME, port, raw: true, entry },
			{ kind: 'cidr', block, port, raw: true, entry },
		]
	})
}

/** The addresses a name resolves to when the proxy answers it itself (`HOST_SERVICES_NAME`). */
export function ownAddressesOf(name: string): readonly string[] | undefined {
	return name === HOST_SERVICES_NAME ? [HOST_LOOPBACK] : undefined
}
