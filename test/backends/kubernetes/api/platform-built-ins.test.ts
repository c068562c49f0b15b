// The API client stands on the platform: with no TLS material every request goes through the
// global `fetch`; a custom CA switches it to `node:https`, verified against that CA, and the global
// `fetch` is then never called; and the backend imports no package but `yaml` (the kubeconfig
// reader issue 5 adds) besides Node built-ins.
import { readdirSync, readFileSync } from 'node:fs'
import {
	createServer as createHttpServer,
	type IncomingMessage,
	type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join, relative } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { makeTestTls, type TestTls } from './test-tls.js'

const TOKEN = 'platform-token'
let tls: TestTls
const servers: Array<Server | ReturnType<typeof createHttpServer>> = []

// Key generation: seconds on a loaded machine.
beforeAll(() => {
	tls = makeTestTls()
}, 120_000)

afterEach(() => {
	vi.unstubAllGlobals()
})

afterAll(async () => {
	await Promise.all(
		servers.map((server) => {
			server.closeAllConnections()
			return new Promise((resolve) => server.close(resolve))
		}),
	)
	tls?.remove()
})

function answer(req: IncomingMessage, res: ServerResponse): void {
	res.writeHead(200, { 'content-type': 'application/json' })
	res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization ?? null }))
}

async function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
	servers.push(server)
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	return (server.address() as AddressInfo).port
}

/** Wraps the real global `fetch`, recording every URL it is called with. */
function spyOnGlobalFetch(): string[] {
	const urls: string[] = []
	const real = globalThis.fetch
	vi.stubGlobal('fetch', (input: string | URL | Request, init?: RequestInit) => {
		urls.push(String(input))
		return real(input, init)
	})
	return urls
}

describe('the transport the client picks', () => {
	it('sends every request through the global fetch when no CA is supplied', async () => {
		const port = await listen(createHttpServer(answer))
		const urls = spyOnGlobalFetch()
		const client = createKubernetesClient({
			server: `http://127.0.0.1:${port}`,
			getToken: () => TOKEN,
		})
		expect(await client.get('/version')).toEqual({ path: '/version', auth: `Bearer ${TOKEN}` })
		await client.list('/api/v1/namespaces')
		expect(urls).toEqual([
			`http://127.0.0.1:${port}/version`,
			`http://127.0.0.1:${port}/api/v1/namespaces`,
		])
	})

	it('switches to node:https verified against a custom CA and never calls the global fetch', async () => {
		const port = await listen(
			createHttpsServer({ cert: tls.serverCert, key: tls.serverKey }, answer),
		)
		const urls = spyOnGlobalFetch()
		const client = createKubernetesClient({
			server: `https://127.0.0.1:${port}`,
			ca: tls.caPem,
			getToken: () => TOKEN,
		})
		// The server's certificate is signed by nothing in the system store: only `ca` verifies it.
		expect(await client.get('/version')).toEqual({ path: '/version', auth: `Bearer ${TOKEN}` })
		expect(urls).toEqual([])
	})
})

describe('dependencies of the Kubernetes backend', () => {
	it('imports nothing outside the package but node built-ins and yaml, and yaml only for the kubeconfig', () => {
		const root = join(import.meta.dirname, '..', '..', '..', '..', 'src', 'backends', 'kubernetes')
		const files = (readdirSync(root, { recursive: true }) as string[])
			.filter((file) => file.endsWith('.ts'))
			.map((file) => join(root, file))
		const external: string[] = []
		for (const file of files) {
			const source = readFileSync(file, 'utf8')
			for (const match of source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
				const specifier = match[1] ?? ''
				if (specifier.startsWith('.') || specifier.startsWith('node:')) continue
				external.push(`${relative(root, file)}: ${specifier}`)
			}
		}
		expect(files.length).toBeGreaterThan(10)
		expect(external).toEqual(['api/kubeconfig.ts: yaml'])
	})
})
