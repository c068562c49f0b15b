/**
 * The Docker Engine API over its unix socket with node's own http: no SDK, no CLI. Every path is
 * versioned (`/v1.41/…`, the API both Docker and Podman's compatible service serve), every call
 * takes an `AbortSignal`, every reply is read up to a byte bound (an engine that answers without
 * end is cut off with `DockerEngineReplyError`), and a non-2xx answer is a
 * `DockerEngineRequestError` carrying the engine's JSON `message`.
 */
import { request } from 'node:http'
import type { Readable } from 'node:stream'
import { isRecord } from '../../../common/is-record.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import {
	DockerEngineReplyError,
	DockerEngineRequestError,
	DockerEngineUnreachableError,
} from './docker-errors.js'

/** The Engine API version every path carries. */
export const DOCKER_API_VERSION = '1.41'
/** The engine's socket when neither `backend.dockerHost` nor `DOCKER_HOST` names one. */
export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock'
/** The most of one reply read by default (an inspect is a few KiB; a listing of ours a few MiB). */
export const DEFAULT_DOCKER_MAX_REPLY_BYTES = 4 * 1024 * 1024

/**
 * The socket path of a `unix://` Docker host (`backend.dockerHost`, else `DOCKER_HOST`, else the
 * default). A `tcp://` or `ssh://` host is refused by name: a plain TCP engine hands root on the
 * host to anyone who can reach the port, and TLS client certificates are not wired here.
 */
export function dockerSocketPath(dockerHost: string | undefined, field: string): string {
	if (dockerHost === undefined || dockerHost === '') return DEFAULT_DOCKER_SOCKET
	const match = /^unix:\/\/(\/.*)$/.exec(dockerHost)
	if (match?.[1] === undefined) {
		throw new SandboxConfigError(
			field,
			`'${dockerHost.replace(/\/\/[^@/]*@/, '//…@')}' is not served: only a unix:///absolute/path Docker host is (tcp:// and ssh:// engines are refused; point it at the engine's unix socket)`,
		)
	}
	return match[1]
}

export interface DockerRequest {
	readonly method: 'GET' | 'POST' | 'DELETE' | 'HEAD'
	/** Unversioned, no query: `/containers/create`. */
	readonly path: string
	readonly query?: Readonly<Record<string, string>>
	/** Sent as JSON. */
	readonly json?: unknown
	/** Sent as it is (an image tarball), `Content-Type: application/x-tar`. */
	readonly stream?: Readable
	readonly signal?: AbortSignal
	readonly maxReplyBytes?: number
}

export interface DockerReply {
	readonly status: number
	/** The parsed JSON body, or undefined when empty. */
	readonly body: unknown
	/** The raw body text (a streamed progress reply is several JSON values). */
	readonly text: string
}

export class DockerEngineClient {
	readonly socketPath: string
	readonly maxReplyBytes: number

	constructor(socketPath: string, maxReplyBytes = DEFAULT_DOCKER_MAX_REPLY_BYTES) {
		this.socketPath = socketPath
		this.maxReplyBytes = maxReplyBytes
	}

	/** One call; resolves with a 2xx reply, rejects with a named error otherwise. */
	async call(req: DockerRequest): Promise<DockerReply> {
		req.signal?.throwIfAborted()
		const reply = await this.send(req)
		if (reply.status >= 200 && reply.status < 300) return reply
		const message =
			isRecord(reply.body) && typeof reply.body.message === 'string' ? reply.body.message : ''
		throw new DockerEngineRequestError(req.method, req.path, reply.status, message)
	}

	/** The call's JSON body, which must be an object. */
	async json(req: DockerRequest): Promise<Record<string, unknown>> {
		const reply = await this.call(req)
		if (!isRecord(reply.body)) throw this.malformed(req)
		return reply.body
	}

	/** The call's JSON body, which must be an array. */
	async list(req: DockerRequest): Promise<unknown[]> {
		const reply = await this.call(req)
		if (!Array.isArray(reply.body)) throw this.malformed(req)
		return reply.body
	}

	private malformed(req: DockerRequest): DockerEngineReplyError {
		return new DockerEngineReplyError('engine-reply-malformed', req.method, req.path, 0)
	}

	private send(req: DockerRequest): Promise<DockerReply> {
		const limit = req.maxReplyBytes ?? this.maxReplyBytes
		const query = req.query ? `?${new URLSearchParams(req.query).toString()}` : ''
		const payload = req.json === undefined ? undefined : Buffer.from(JSON.stringify(req.json))
		const headers: Record<string, string> = { Host: 'docker' }
		if (payload) {
			headers['Content-Type'] = 'application/json'
			headers['Content-Length'] = String(payload.length)
		} else if (req.stream) {
			headers['Content-Type'] = 'application/x-tar'
		}
		return new Promise<DockerReply>((resolve, reject) => {
			const outgoing = request(
				{
					socketPath: this.socketPath,
					method: req.method,
					path: `/v${DOCKER_API_VERSION}${req.path}${query}`,
					headers,
					...(req.signal ? { signal: req.signal } : {}),
				},
				(incoming) => {
					const chunks: Buffer[] = []
					let size = 0
					incoming.on('data', (chunk: Buffer) => {
						size += chunk.length
						if (size > limit) {
							const error = new DockerEngineReplyError(
								'engine-reply-too-large',
								req.method,
								req.path,
								limit,
							)
							incoming.destroy(error)
							outgoing.destroy(error)
							reject(error)
							return
						}
						chunks.push(chunk)
					})
					incoming.on('error', reject)
					incoming.on('end', () => {
						const text = Buffer.concat(chunks).toString('utf8')
						resolve({ status: incoming.statusCode ?? 0, body: parseJson(text), text })
					})
				},
			)
			outgoing.on('error', (error: NodeJS.ErrnoException) => {
				if (req.signal?.aborted) reject(req.signal.reason)
				else if (error instanceof DockerEngineReplyError) reject(error)
				else reject(new DockerEngineUnreachableError(this.socketPath, error.code, { cause: error }))
			})
			if (payload) outgoing.end(payload)
			else if (req.stream) req.stream.pipe(outgoing)
			else outgoing.end()
		})
	}
}

function parseJson(text: string): unknown {
	if (text.trim() === '') return undefined
	try {
		return JSON.parse(text)
	} catch {
		return undefined
	}
}

/** Which engine serves the API: they read a seccomp profile from different places. */
export type DockerEngineKind = 'docker' | 'podman'

/** `GET /version`: Podman's compatible service names a `Podman Engine` component. */
export async function dockerEngineKind(
	client: DockerEngineClient,
	signal?: AbortSignal,
): Promise<DockerEngineKind> {
	const version = await client.json({
		method: 'GET',
		path: '/version',
		...(signal ? { signal } : {}),
	})
	const components = Array.isArray(version.Components) ? version.Components : []
	const podman = components.some(
		(component) =>
			isRecord(component) && typeof component.Name === 'string' && /podman/i.test(component.Name),
	)
	return podman ? 'podman' : 'docker'
}
