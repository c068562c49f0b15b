/** ClientHello bytes for the parser tests: real ones from node:tls, and hand-built hostile ones. */
import { createServer, type Socket } from 'node:net'
import { connect } from 'node:tls'

/** The first bytes a real TLS client sends (node:tls, optionally without SNI). */
export async function realClientHello(options: { servername?: string; alpn?: string[] }) {
	let client: ReturnType<typeof connect> | undefined
	const server = createServer()
	const bytes = await new Promise<Buffer>((resolve, reject) => {
		server.once('connection', (socket: Socket) => {
			socket.once('data', (chunk: Buffer) => {
				resolve(chunk)
				socket.destroy()
			})
		})
		server.listen(0, '127.0.0.1', () => {
			const address = server.address()
			if (address === null || typeof address === 'string') return reject(new Error('no port'))
			client = connect({
				host: '127.0.0.1',
				port: address.port,
				...(options.servername === undefined ? {} : { servername: options.servername }),
				...(options.alpn ? { ALPNProtocols: options.alpn } : {}),
			})
			client.on('error', () => undefined)
		})
	})
	client?.destroy()
	server.close()
	return bytes
}

function u16(value: number): Buffer {
	const buffer = Buffer.alloc(2)
	buffer.writeUInt16BE(value)
	return buffer
}

function vector16(body: Buffer): Buffer {
	return Buffer.concat([u16(body.length), body])
}

export function extension(type: number, body: Buffer): Buffer {
	return Buffer.concat([u16(type), vector16(body)])
}

export function serverNameExtension(...names: string[]): Buffer {
	const entries = names.map((name) =>
		Buffer.concat([Buffer.from([0]), vector16(Buffer.from(name, 'latin1'))]),
	)
	return extension(0, vector16(Buffer.concat(entries)))
}

/** A ClientHello body (after the handshake header) with these extensions. */
export function helloBody(extensions: Buffer[]): Buffer {
	return Buffer.concat([
		Buffer.from([3, 3]),
		Buffer.alloc(32, 7),
		Buffer.from([0]),
		vector16(Buffer.from([0x13, 0x01])),
		Buffer.from([1, 0]),
		vector16(Buffer.concat(extensions)),
	])
}

/** The handshake message split into records of at most `recordSize` bytes. */
export function records(body: Buffer, recordSize = 16_384): Buffer {
	const length = Buffer.alloc(3)
	length.writeUIntBE(body.length, 0, 3)
	const message = Buffer.concat([Buffer.from([1]), length, body])
	const out: Buffer[] = []
	for (let offset = 0; offset < message.length; offset += recordSize) {
		const piece = message.subarray(offset, offset + recordSize)
		out.push(Buffer.from([0x16, 3, 1]), u16(piece.length), piece)
	}
	return Buffer.concat(out)
}
