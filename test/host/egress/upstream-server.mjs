// The upstreams of the egress tests, run inside a stand-in internet namespace: HTTP on 80 and
// HTTPS on 443 answer the request they saw as JSON (Host, path, header fields); 5432 echoes raw
// bytes; 2222 speaks first (a banner), like SSH or SMTP; 6000 records every byte it receives, per
// connection, and `GET /__recorded` on 80 hands over (and forgets) the record of every connection
// since, once they have closed. An upgrade to `echo` on 80 is answered
// `101` and then echoes (at `/slow` after 500 ms); at `/refuse` it is answered `400`. Certificates come from a JSON file
// `{ "<name>": { key, cert } }`; argv: <certs.json> <address>.
import { readFileSync } from 'node:fs'
import { createServer as createHttp } from 'node:http'
import { createServer as createHttps } from 'node:https'
import { createServer as createTcp } from 'node:net'
import { createSecureContext } from 'node:tls'

const [certsPath, address] = process.argv.slice(2)
const certs = JSON.parse(readFileSync(certsPath, 'utf8'))
const contexts = new Map(
	Object.entries(certs).map(([name, pair]) => [name, createSecureContext(pair)]),
)
const [firstName] = Object.keys(certs)
const recorded = []
const answer = (request, response) => {
	if (request.url === '/__recorded') {
		// Once every connection open now has closed (a backstop of 5 s): nothing is still in flight.
		const backstop = new Promise((resolve) => setTimeout(resolve, 5000))
		Promise.race([Promise.all(recorded.map((entry) => entry.done)), backstop]).then(() => {
			const closed = recorded.filter((entry) => entry.closed)
			recorded.splice(0, recorded.length, ...recorded.filter((entry) => !entry.closed))
			response.setHeader('content-type', 'application/json')
			response.end(
				JSON.stringify(closed.map((entry) => Buffer.concat(entry.chunks).toString('latin1'))),
			)
		})
		return
	}
	let size = 0
	request.on('data', (chunk) => {
		size += chunk.length
	})
	request.on('end', () => {
		response.setHeader('content-type', 'application/json')
		response.end(
			JSON.stringify({
				host: request.headers.host,
				path: request.url,
				headers: request.headers,
				bodyBytes: size,
			}),
		)
	})
}
const plain = createHttp(answer)
plain.on('upgrade', (request, socket, head) => {
	socket.on('error', () => {})
	if (request.url === '/refuse' || request.headers.upgrade !== 'echo') {
		socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
		return
	}
	const accept = () => {
		socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n')
		if (head.length > 0) socket.write(head)
		socket.pipe(socket)
	}
	if (request.url === '/slow') setTimeout(accept, 500)
	else accept()
})
const servers = [
	[plain, 80],
	[
		createHttps(
			{
				...certs[firstName],
				SNICallback: (name, done) => done(null, contexts.get(name) ?? contexts.get(firstName)),
			},
			answer,
		),
		443,
	],
	[createTcp((socket) => socket.on('error', () => {}).pipe(socket)), 5432],
	[
		createTcp((socket) => {
			const entry = { chunks: [], closed: false }
			entry.done = new Promise((resolve) =>
				socket.on('close', () => {
					entry.closed = true
					resolve()
				}),
			)
			recorded.push(entry)
			socket.on('error', () => {})
			socket.on('data', (chunk) => entry.chunks.push(chunk))
			socket.on('end', () => socket.end())
		}),
		6000,
	],
	[
		createTcp((socket) => {
			socket.on('error', () => {})
			socket.write('BANNER\r\n')
			socket.pipe(socket)
		}),
		2222,
	],
	[
		createTcp((socket) => {
			// Bulk source for the throughput benchmark: 64 MiB, then close.
			socket.on('error', () => {})
			const chunk = Buffer.alloc(1024 * 1024, 7)
			let left = 64
			const pump = () => {
				while (left > 0) {
					left--
					if (!socket.write(chunk)) return socket.once('drain', pump)
				}
				socket.end()
			}
			pump()
		}),
		9000,
	],
]
let pending = servers.length
for (const [server, port] of servers) {
	server.listen(port, address, () => {
		pending--
		if (pending === 0) console.log('ready')
	})
}
