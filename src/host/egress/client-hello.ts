/**
 * Reads the server name (SNI) and ALPN offers out of the first bytes a client sends on a TLS
 * connection: the ClientHello, possibly fragmented over several handshake records. The input is
 * hostile, so every length is checked against what is there and against `MAX_CLIENT_HELLO_BYTES`,
 * and a second server_name extension, or a second host name in it, is refused rather than guessed.
 */

/** A ClientHello larger than this is refused (post-quantum key shares keep real ones under 4 KiB). */
export const MAX_CLIENT_HELLO_BYTES = 64 * 1024
/** A ClientHello cut into more records than this is refused: real ones take one to four, and
 * each record needs another look at the bytes so far. */
export const MAX_CLIENT_HELLO_RECORDS = 32
const RECORD_HEADER = 5
const HANDSHAKE = 0x16
const CLIENT_HELLO = 1
const MAX_RECORD_BYTES = 16_384 + 2048
const EXT_SERVER_NAME = 0
const EXT_ALPN = 16

export type ClientHelloRead =
	/** More bytes are needed before anything can be said: at least `needBytes` in all. */
	| { readonly kind: 'incomplete'; readonly needBytes: number }
	/** The stream does not start with a TLS handshake record. */
	| { readonly kind: 'not-tls' }
	| { readonly kind: 'invalid'; readonly reason: string }
	| {
			readonly kind: 'client-hello'
			/** Absent when the client sent no server_name extension. */
			readonly serverName?: string
			readonly alpn: readonly string[]
	  }

class Reader {
	offset = 0
	constructor(readonly bytes: Buffer) {}
	need(count: number): boolean {
		return this.offset + count <= this.bytes.length
	}
	u8(): number {
		const value = this.bytes.readUInt8(this.offset)
		this.offset += 1
		return value
	}
	u16(): number {
		const value = this.bytes.readUInt16BE(this.offset)
		this.offset += 2
		return value
	}
	take(count: number): Buffer {
		const slice = this.bytes.subarray(this.offset, this.offset + count)
		this.offset += count
		return slice
	}
}

type Fragments =
	| { kind: 'done'; message: Buffer }
	| Exclude<ClientHelloRead, { kind: 'client-hello' }>

/** The handshake message, reassembled from as many handshake records as it spans. */
function handshakeMessage(bytes: Buffer): Fragments {
	if (bytes.length === 0) return { kind: 'incomplete', needBytes: 1 }
	if (bytes[0] !== HANDSHAKE) return { kind: 'not-tls' }
	if (bytes.length >= 2 && bytes[1] !== 3) return { kind: 'not-tls' }
	// The handshake header is judged as soon as it is in: an oversized claim is refused before
	// its bytes are waited for.
	if (bytes.length >= RECORD_HEADER + 4 && bytes.readUInt16BE(3) >= 4) {
		if (bytes[RECORD_HEADER] !== CLIENT_HELLO)
			return { kind: 'invalid', reason: 'not a ClientHello' }
		const claimed = 4 + bytes.readUIntBE(RECORD_HEADER + 1, 3)
		if (claimed > MAX_CLIENT_HELLO_BYTES) {
			return { kind: 'invalid', reason: `a ClientHello of ${claimed} bytes` }
		}
	}
	const pieces: Buffer[] = []
	let gathered = 0
	let offset = 0
	let wanted: number | undefined
	for (let record = 1; ; record++) {
		if (record > MAX_CLIENT_HELLO_RECORDS) {
			return {
				kind: 'invalid',
				reason: `a ClientHello in over ${MAX_CLIENT_HELLO_RECORDS} records`,
			}
		}
		if (offset + RECORD_HEADER > bytes.length) {
			return { kind: 'incomplete', needBytes: offset + RECORD_HEADER }
		}
		if (bytes[offset] !== HANDSHAKE || bytes[offset + 1] !== 3) {
			return { kind: 'invalid', reason: 'a non-handshake record inside the ClientHello' }
		}
		const length = bytes.readUInt16BE(offset + 3)
		if (length === 0 || length > MAX_RECORD_BYTES) {
			return { kind: 'invalid', reason: `a handshake record of ${length} bytes` }
		}
		if (offset + RECORD_HEADER + length > bytes.length) {
			return { kind: 'incomplete', needBytes: offset + RECORD_HEADER + length }
		}
		const piece = bytes.subarray(offset + RECORD_HEADER, offset + RECORD_HEADER + length)
		pieces.push(piece)
		gathered += piece.length
		offset += RECORD_HEADER + length
		if (wanted === undefined && gathered >= 4) {
			const head = Buffer.concat(pieces)
			if (head[0] !== CLIENT_HELLO) return { kind: 'invalid', reason: 'not a ClientHello' }
			wanted = 4 + head.readUIntBE(1, 3)
			if (wanted > MAX_CLIENT_HELLO_BYTES) {
				return { kind: 'invalid', reason: `a ClientHello of ${wanted} bytes` }
			}
		}
		if (wanted !== undefined && gathered >= wanted) {
			return { kind: 'done', message: Buffer.concat(pieces).subarray(4, wanted) }
		}
	}
}

function serverNameOf(data: Buffer): string | { invalid: string } {
	const reader = new Reader(data)
	if (!reader.need(2)) return { invalid: 'a truncated server_name list' }
	const listLength = reader.u16()
	if (listLength !== data.length - 2) return { invalid: 'a server_name list of the wrong length' }
	let name: string | undefined
	while (reader.offset < data.length) {
		if (!reader.need(3)) return { invalid: 'a truncated server_name entry' }
		const type = reader.u8()
		const length = reader.u16()
		if (!reader.need(length) || length === 0) return { invalid: 'a truncated server name' }
		const value = reader.take(length)
		if (type !== 0) continue
		if (name !== undefined) return { invalid: 'two host names in server_name' }
		// Only printable ASCII can be a DNS name; anything else would not compare equal anyway.
		if (!value.every((byte) => byte > 0x20 && byte < 0x7f)) {
			return { invalid: 'a server name that is not ASCII' }
		}
		name = value.toString('latin1')
	}
	return name ?? { invalid: 'a server_name extension without a host name' }
}

function alpnOf(data: Buffer): string[] | { invalid: string } {
	const reader = new Reader(data)
	if (!reader.need(2) || reader.u16() !== data.length - 2)
		return { invalid: 'a malformed ALPN list' }
	const protocols: string[] = []
	while (reader.offset < data.length) {
		const length = reader.u8()
		if (length === 0 || !reader.need(length)) return { invalid: 'a truncated ALPN protocol' }
		protocols.push(reader.take(length).toString('latin1'))
	}
	return protocols
}

/** What the bytes received so far say about the ClientHello (see `ClientHelloRead`). */
export function readClientHello(bytes: Buffer): ClientHelloRead {
	const fragments = handshakeMessage(bytes)
	if (fragments.kind !== 'done') return fragments
	const reader = new Reader(fragments.message)
	const truncated: ClientHelloRead = { kind: 'invalid', reason: 'a truncated ClientHello' }
	if (!reader.need(2 + 32 + 1)) return truncated
	reader.take(2 + 32)
	const sessionId = reader.u8()
	if (sessionId > 32 || !reader.need(sessionId + 2)) return truncated
	reader.take(sessionId)
	const suites = reader.u16()
	if (suites === 0 || suites % 2 !== 0 || !reader.need(suites + 1)) return truncated
	reader.take(suites)
	const compression = reader.u8()
	if (compression === 0 || !reader.need(compression)) return truncated
	reader.take(compression)
	if (reader.offset === fragments.message.length) return { kind: 'client-hello', alpn: [] }
	if (!reader.need(2)) return truncated
	const extensionsLength = reader.u16()
	if (reader.offset + extensionsLength !== fragments.message.length) {
		return { kind: 'invalid', reason: 'extensions of the wrong length' }
	}
	let serverName: string | undefined
	let alpn: string[] = []
	const seen = new Set<number>()
	while (reader.offset < fragments.message.length) {
		if (!reader.need(4)) return truncated
		const type = reader.u16()
		const length = reader.u16()
		if (!reader.need(length)) return truncated
		const data = reader.take(length)
		if (seen.has(type)) return { kind: 'invalid', reason: `extension ${type} twice` }
		seen.add(type)
		if (type === EXT_SERVER_NAME) {
			const name = serverNameOf(data)
			if (typeof name !== 'string') return { kind: 'invalid', reason: name.invalid }
			serverName = name
		} else if (type === EXT_ALPN) {
			const protocols = alpnOf(data)
			if (!Array.isArray(protocols)) return { kind: 'invalid', reason: protocols.invalid }
			alpn = protocols
		}
	}
	return { kind: 'client-hello', alpn, ...(serverName === undefined ? {} : { serverName }) }
}
