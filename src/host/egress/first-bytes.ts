/**
 * What a client's first bytes inside an HTTP tunnel (every tunnel but a `tcp://` rule's) are, read
 * as they arrive, so the proxy can check the names they carry before anything reaches the
 * upstream: a TLS ClientHello (its SNI) when the first byte is a TLS handshake record, otherwise
 * an HTTP/1.x request head read strictly (`request-head.ts`). There is no third kind: bytes that
 * are neither are refused, never passed on. Linear in the bytes received: the head is read
 * incrementally, and a ClientHello is looked at again only when the record it waits for is in.
 */
import { readClientHello } from './client-hello.js'
import { type RequestHead, RequestHeadReader, type RequestHeadRefusal } from './request-head.js'

/** A request head in a tunnel is at most this long (line, fields, the blank line). */
export const MAX_TUNNEL_HEAD_BYTES = 64 * 1024

const TLS_HANDSHAKE = 0x16

export type FirstBytes =
	| { readonly kind: 'incomplete' }
	| {
			readonly kind: 'invalid'
			readonly layer: 'sni' | 'http'
			readonly reason: 'client-hello-invalid' | `http-${RequestHeadRefusal}`
	  }
	/** `bytes`: everything received, the ClientHello first (forwarded as sent). */
	| {
			readonly kind: 'tls'
			readonly serverName?: string
			readonly alpn: readonly string[]
			readonly bytes: Buffer
	  }
	/** `early`: what arrived after the head (the start of the body). */
	| { readonly kind: 'http'; readonly head: RequestHead; readonly early: Buffer }

export class FirstBytesReader {
	#http: RequestHeadReader | undefined
	#tls: Buffer[] | undefined
	#tlsBytes = 0
	#needBytes = 0

	push(chunk: Buffer): FirstBytes {
		if (chunk.length === 0) return { kind: 'incomplete' }
		if (this.#http === undefined && this.#tls === undefined) {
			if (chunk[0] === TLS_HANDSHAKE) this.#tls = []
			else this.#http = new RequestHeadReader(MAX_TUNNEL_HEAD_BYTES)
		}
		return this.#tls ? this.#pushTls(this.#tls, chunk) : this.#pushHttp(chunk)
	}

	#pushHttp(chunk: Buffer): FirstBytes {
		const read = this.#http?.push(chunk) ?? { kind: 'incomplete' }
		if (read.kind === 'incomplete') return read
		if (read.kind === 'invalid')
			return { kind: 'invalid', layer: 'http', reason: `http-${read.reason}` }
		return { kind: 'http', head: read.head, early: read.rest }
	}

	#pushTls(chunks: Buffer[], chunk: Buffer): FirstBytes {
		chunks.push(chunk)
		this.#tlsBytes += chunk.length
		if (this.#tlsBytes < this.#needBytes) return { kind: 'incomplete' }
		const bytes = Buffer.concat(chunks, this.#tlsBytes)
		chunks.splice(0, chunks.length, bytes)
		const hello = readClientHello(bytes)
		if (hello.kind === 'incomplete') {
			// Bounded by the reader: a message of at most 64 KiB in at most 32 records.
			this.#needBytes = hello.needBytes
			return { kind: 'incomplete' }
		}
		if (hello.kind !== 'client-hello') {
			return { kind: 'invalid', layer: 'sni', reason: 'client-hello-invalid' }
		}
		return {
			kind: 'tls',
			alpn: hello.alpn,
			bytes,
			...(hello.serverName === undefined ? {} : { serverName: hello.serverName }),
		}
	}
}
