/**
 * The DNS stub's wire format: one question read from a query (bounded, no compression, labels of
 * the shared name grammar), and the answer built for it — an A record with the fake address, an
 * empty NOERROR for every other type (AAAA included: the guest then uses IPv4), NXDOMAIN for a name
 * the policy refuses, FORMERR for a question it cannot read.
 */
import { normalizeHostname } from '../../wire/egress-bridge.js'

export const DNS_TYPE_A = 1
const DNS_CLASS_IN = 1
const HEADER = 12
const MAX_QUERY_BYTES = 512
/** Answers live as long as the map does; a minute keeps a changed policy from lingering. */
const ANSWER_TTL_S = 60

export type DnsQuestion =
	| {
			readonly kind: 'question'
			readonly id: number
			readonly flags: number
			readonly name: string
			readonly type: number
			readonly raw: Buffer
	  }
	| { readonly kind: 'malformed'; readonly id: number; readonly flags: number }
	/** Not even a header: dropped without an answer. */
	| { readonly kind: 'unreadable' }

export function readDnsQuestion(packet: Buffer): DnsQuestion {
	if (packet.length < HEADER || packet.length > MAX_QUERY_BYTES) return { kind: 'unreadable' }
	const id = packet.readUInt16BE(0)
	const flags = packet.readUInt16BE(2)
	const malformed = { kind: 'malformed', id, flags } as const
	// A response, or not a standard query, or not exactly one question.
	if ((flags & 0x8000) !== 0 || ((flags >> 11) & 0xf) !== 0 || packet.readUInt16BE(4) !== 1) {
		return malformed
	}
	const labels: string[] = []
	let offset = HEADER
	for (;;) {
		const length = packet[offset]
		if (length === undefined || length > 63) return malformed
		offset += 1
		if (length === 0) break
		if (offset + length > packet.length) return malformed
		labels.push(packet.subarray(offset, offset + length).toString('latin1'))
		offset += length
	}
	if (offset + 4 > packet.length) return malformed
	const type = packet.readUInt16BE(offset)
	const qclass = packet.readUInt16BE(offset + 2)
	const name = normalizeHostname(labels.join('.'))
	if (name === undefined || qclass !== DNS_CLASS_IN) return malformed
	return { kind: 'question', id, flags, name, type, raw: packet.subarray(HEADER, offset + 4) }
}

const RCODE = { noError: 0, formErr: 1, nxDomain: 3 } as const

function header(
	id: number,
	queryFlags: number,
	rcode: number,
	questions: number,
	answers: number,
): Buffer {
	const out = Buffer.alloc(HEADER)
	out.writeUInt16BE(id, 0)
	// QR, AA, RD copied, RA.
	out.writeUInt16BE(0x8000 | 0x0400 | (queryFlags & 0x0100) | 0x0080 | rcode, 2)
	out.writeUInt16BE(questions, 4)
	out.writeUInt16BE(answers, 6)
	return out
}

/** The answer to `question`: `address` for an A question, nothing for others; undefined ⇒ NXDOMAIN. */
export function dnsAnswer(
	question: DnsQuestion & { kind: 'question' },
	address: string | undefined,
): Buffer {
	if (address === undefined) {
		return Buffer.concat([header(question.id, question.flags, RCODE.nxDomain, 1, 0), question.raw])
	}
	if (question.type !== DNS_TYPE_A) {
		return Buffer.concat([header(question.id, question.flags, RCODE.noError, 1, 0), question.raw])
	}
	const record = Buffer.alloc(16)
	record.writeUInt16BE(0xc000 | HEADER, 0)
	record.writeUInt16BE(DNS_TYPE_A, 2)
	record.writeUInt16BE(DNS_CLASS_IN, 4)
	record.writeUInt32BE(ANSWER_TTL_S, 6)
	record.writeUInt16BE(4, 10)
	address.split('.').forEach((part, index) => {
		record[12 + index] = Number(part)
	})
	return Buffer.concat([
		header(question.id, question.flags, RCODE.noError, 1, 1),
		question.raw,
		record,
	])
}

export function dnsFormatError(question: DnsQuestion & { kind: 'malformed' }): Buffer {
	return header(question.id, question.flags, RCODE.formErr, 0, 0)
}
