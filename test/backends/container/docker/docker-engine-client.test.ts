/**
 * The Engine API client against real HTTP servers on unix sockets that answer as an engine would,
 * and as a broken or hostile one would: versioned paths, JSON errors as named errors, a reply
 * past its bound cut off, an abort honoured mid-reply, an absent socket named, a tcp host refused.
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
	DockerEngineClient,
	dockerSocketPath,
} from '../../../../src/backends/container/docker/docker-engine-client.js'
import {
	DockerEngineReplyError,
	DockerEngineRequestError,
	DockerEngineUnreachableError,
} from '../../../../src/container-entry.js'
import { SandboxConfigError } from '../../../../src/contract/errors.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup()
})

async function engine(handler: Parameters<typeof createServer>[1]): Promise<DockerEngineClient> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-engine-'))
	const socketPath = join(dir, 'engine.sock')
	const server: Server = createServer(handler)
	await new Promise<void>((resolve) => server.listen(socketPath, resolve))
	cleanups.push(async () => {
		server.closeAllConnections()
		await new Promise<void>((resolve) => server.close(() => resolve()))
		await rm(dir, { recursive: true, force: true })
	})
	return new DockerEngineClient(socketPath, 64 * 1024)
}

describe('the Docker Engine API client', () => {
	it('sends versioned paths with the query and JSON body, and reads the JSON reply', async () => {
		const seen: { url?: string; body?: string; type?: string } = {}
		const client = await engine((req, res) => {
			let body = ''
			req.on('data', (chunk: Buffer) => {
				body += chunk.toString()
			})
			req.on('end', () => {
				Object.assign(seen, { url: req.url, body, type: req.headers['content-type'] })
				res.writeHead(201, { 'Content-Type': 'application/json' })
				res.end(JSON.stringify({ Id: 'abc', Warnings: [] }))
			})
		})
		const reply = await client.json({
			method: 'POST',
			path: '/containers/create',
			query: { name: 'namzu-sbx-1' },
			json: { Image: 'x' },
		})
		expect(reply).toEqual({ Id: 'abc', Warnings: [] })
		expect(seen).toEqual({
			url: '/v1.41/containers/create?name=namzu-sbx-1',
			body: '{"Image":"x"}',
			type: 'application/json',
		})
	})

	it.each([
		[400, 'engine-bad-request'],
		[404, 'engine-not-found'],
		[409, 'engine-conflict'],
		[500, 'engine-failed'],
		[403, 'engine-refused'],
	])('maps an HTTP %i JSON error to DockerEngineRequestError (%s)', async (status, reason) => {
		const client = await engine((_req, res) => {
			res.writeHead(status, { 'Content-Type': 'application/json' })
			res.end(JSON.stringify({ message: 'no such container: x' }))
		})
		const error = await client
			.call({ method: 'DELETE', path: '/containers/x' })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(DockerEngineRequestError)
		expect(error).toMatchObject({
			reason,
			status,
			method: 'DELETE',
			path: '/containers/x',
			engineMessage: 'no such container: x',
		})
	})

	it('cuts off a reply past its byte bound instead of buffering it', async () => {
		const client = await engine((_req, res) => {
			res.writeHead(200, { 'Content-Type': 'application/json' })
			const chunk = Buffer.alloc(16 * 1024, 0x20)
			// An engine that never stops answering.
			const pump = () => {
				while (res.write(chunk)) {}
				res.once('drain', pump)
			}
			pump()
		})
		const error = await client
			.call({ method: 'GET', path: '/containers/json' })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(DockerEngineReplyError)
		expect(error).toMatchObject({ reason: 'engine-reply-too-large', maxReplyBytes: 64 * 1024 })
	})

	it('names a reply that is not the documented JSON', async () => {
		const client = await engine((_req, res) => {
			res.writeHead(200, { 'Content-Type': 'text/plain' })
			res.end('hello')
		})
		const error = await client
			.json({ method: 'GET', path: '/containers/x/json' })
			.catch((caught: unknown) => caught)
		expect(error).toMatchObject({
			name: 'DockerEngineReplyError',
			reason: 'engine-reply-malformed',
		})
	})

	it('rejects with the signal reason when aborted while the engine is silent', async () => {
		const client = await engine(() => undefined)
		const controller = new AbortController()
		const pending = client.call({
			method: 'POST',
			path: '/containers/x/wait',
			signal: controller.signal,
		})
		const reason = new Error('caller gave up')
		setTimeout(() => controller.abort(reason), 50)
		await expect(pending).rejects.toBe(reason)
	})

	it('names an engine socket that is not there', async () => {
		const client = new DockerEngineClient('/nonexistent/namzu/engine.sock')
		const error = await client
			.call({ method: 'GET', path: '/version' })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(DockerEngineUnreachableError)
		expect(error).toMatchObject({
			reason: 'engine-unreachable',
			retryable: true,
			code: 'ENOENT',
			socketPath: '/nonexistent/namzu/engine.sock',
		})
	})
})

describe('the Docker host', () => {
	it('takes unix:// and defaults to /var/run/docker.sock', () => {
		expect(dockerSocketPath('unix:///run/podman/podman.sock', 'DOCKER_HOST')).toBe(
			'/run/podman/podman.sock',
		)
		expect(dockerSocketPath(undefined, 'DOCKER_HOST')).toBe('/var/run/docker.sock')
	})

	it.each([
		'tcp://127.0.0.1:2375',
		'ssh://user@host',
		'unix://relative.sock',
		'npipe:////./pipe/docker_engine',
	])('refuses %s by name', (host) => {
		const error = (() => {
			try {
				dockerSocketPath(host, 'backend.dockerHost')
			} catch (caught) {
				return caught
			}
			return undefined
		})()
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: 'backend.dockerHost' })
		expect((error as Error).message).toMatch(/only a unix:\/\/\/absolute\/path/)
		expect((error as Error).message).not.toContain('user@')
	})
})
