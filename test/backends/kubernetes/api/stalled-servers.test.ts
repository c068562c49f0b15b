// The per-request bound on both request paths against real loopback servers: `fetch` (plain
// http, no TLS material) and `node:https` (a custom CA). Each path is held up at connection setup
// (a socket accepted and never answered, not even TLS) and while reading the body (headers sent,
// body stalled); every case rejects with KubernetesApiTimeoutError carrying the bound. The https
// path also verifies the server against the CA and presents a client certificate.
import { writeFileSync } from 'node:fs'
import {
	createServer as createHttpServer,
	type Server as HttpServer,
	type IncomingMessage,
	type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createTcpServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	KubernetesApiError,
	KubernetesApiTimeoutError,
} from '../../../../src/backends/kubernetes/api/api-errors.js'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { asRejection, unexpected } from './rejection.js'
import { makeTestTls, type TestTls } from './test-tls.js'

const TOKEN = 'stall-test-token'
const BOUND_MS = 1000

let tls: TestTls
const servers: Array<Server | HttpServer> = []
const sockets = new Set<Socket>()

async function listen(server: Server | HttpServer): Promise<number> {
	servers.push(server)
	server.on('connection', (socket: Socket) => {
		sockets.add(socket)
		socket.on('close', () => sockets.delete(socket))
	})
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	if (address === null || typeof address === 'string') throw new Error('no port')
	return address.port
}

/** Accepts TCP and never writes a byte. */
const silentServer = () => createTcpServer(() => {})

/** Sends headers and part of the body, then nothing. */
function stallBody(_req: IncomingMessage, res: ServerResponse): void {
	res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
	res.write('{"kind":')
}

/** Answers with the client certificate's CN and the authorization header it saw. */
function answer(req: IncomingMessage, res: ServerResponse): void {
	const peer = (req.socket as TLSSocket).getPeerCertificate?.()
	res.writeHead(200, { 'content-type': 'application/json' })
	res.end(
		JSON.stringify({ cn: peer?.subject?.CN ?? null, auth: req.headers.authorization ?? null }),
	)
}

// Key generation: seconds on a loaded machine.
beforeAll(() => {
	tls = makeTestTls()
}, 120_000)

afterAll(async () => {
	for (const socket of sockets) socket.destroy()
	await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
	tls?.remove()
})

async function expectTimeout(server: string, ca: string | undefined, path: string) {
	const client = createKubernetesClient(
		{ server, getToken: () => TOKEN, ...(ca === undefined ? {} : { ca }) },
		{ apiRequestTimeoutMs: BOUND_MS },
	)
	const error = await client.get(path).then(unexpected, asRejection)
	expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
	expect(error).not.toBeInstanceOf(KubernetesApiError)
	expect(error).toMatchObject({
		name: 'KubernetesApiTimeoutError',
		verb: 'GET',
		path,
		timeoutMs: BOUND_MS,
	})
	expect(`${error.message} ${JSON.stringify(error)}`).not.toContain(TOKEN)
}

describe('fetch path (no TLS material)', () => {
	it('a server that accepts the connection and never answers times out at the bound', async () => {
		const port = await listen(silentServer())
		await expectTimeout(`http://127.0.0.1:${port}`, undefined, '/api/v1/namespaces')
	})

	it('a server that sends headers and stalls the body times out at the bound', async () => {
		const port = await listen(createHttpServer(stallBody))
		await expectTimeout(`http://127.0.0.1:${port}`, undefined, '/api/v1/pods')
	})
})

describe('node:https path (custom CA)', () => {
	it('a server that accepts the connection and never answers, not even TLS, times out at the bound', async () => {
		const port = await listen(silentServer())
		await expectTimeout(`https://127.0.0.1:${port}`, tls.caPem, '/api/v1/namespaces')
	})

	it('a server that sends headers and stalls the body times out at the bound', async () => {
		const port = await listen(
			createHttpsServer({ cert: tls.serverCert, key: tls.serverKey }, stallBody),
		)
		await expectTimeout(`https://127.0.0.1:${port}`, tls.caPem, '/api/v1/pods')
	})

	it('verifies the server against the CA: a certificate the CA did not sign is a connect failure', async () => {
		const port = await listen(
			createHttpsServer({ cert: tls.serverCert, key: tls.serverKey }, answer),
		)
		const other = makeTestTls()
		try {
			const untrusting = createKubernetesClient({
				server: `https://127.0.0.1:${port}`,
				ca: other.caPem,
				getToken: () => TOKEN,
			})
			const error = await untrusting.get('/version').then(unexpected, asRejection)
			expect(error).toBeInstanceOf(KubernetesApiError)
			expect(error).toMatchObject({ transport: 'connect', retryable: true })
			const trusting = createKubernetesClient({
				server: `https://127.0.0.1:${port}`,
				ca: tls.caPem,
				getToken: () => TOKEN,
			})
			expect(await trusting.get('/version')).toEqual({ cn: null, auth: `Bearer ${TOKEN}` })
		} finally {
			other.remove()
		}
		// Generates three keys: seconds on a loaded machine.
	}, 120_000)

	it('presents the kubeconfig client certificate and sends no bearer header without a token', async () => {
		const port = await listen(
			createHttpsServer(
				{
					cert: tls.serverCert,
					key: tls.serverKey,
					ca: tls.caPem,
					requestCert: true,
					rejectUnauthorized: true,
				},
				answer,
			),
		)
		const config = join(tls.dir, 'kubeconfig')
		writeFileSync(
			config,
			[
				'current-context: c',
				'contexts: [{name: c, context: {cluster: k, user: u}}]',
				`clusters: [{name: k, cluster: {server: "https://127.0.0.1:${port}", certificate-authority: ca.crt}}]`,
				'users: [{name: u, user: {client-certificate: client.crt, client-key: client.key}}]',
			].join('\n'),
		)
		const client = createKubernetesClient({ kubeconfig: config })
		expect(await client.get('/version')).toEqual({ cn: 'namzu-client', auth: null })
	})
})
