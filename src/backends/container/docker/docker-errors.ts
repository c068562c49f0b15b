/** What the Docker Engine API answers, as named errors: unreachable, refused, or a reply we will not read. */
import { SandboxError, type SandboxErrorOptions } from '../../../contract/errors.js'

/** The engine's socket could not be reached (not running, wrong `DOCKER_HOST`, no permission). */
export class DockerEngineUnreachableError extends SandboxError {
	override readonly name = 'DockerEngineUnreachableError'
	readonly socketPath: string
	/** The errno code of the failed connect (`ENOENT`, `ECONNREFUSED`, `EACCES`, …). */
	readonly code: string | undefined

	constructor(socketPath: string, code: string | undefined, options: SandboxErrorOptions = {}) {
		super(
			`the Docker engine at unix://${socketPath} is unreachable (${code ?? 'no code'}): start the engine (dockerd, or 'podman system service'), or point DOCKER_HOST / backend.dockerHost at its socket`,
			'engine-unreachable',
			{ retryable: true, ...options },
		)
		this.socketPath = socketPath
		this.code = code
	}
}

/** The reason of an engine's non-2xx answer, by its HTTP status. */
export type DockerEngineRefusalReason =
	| 'engine-bad-request'
	| 'engine-not-found'
	| 'engine-conflict'
	| 'engine-failed'
	| 'engine-refused'

export function dockerRefusalReason(status: number): DockerEngineRefusalReason {
	if (status === 400) return 'engine-bad-request'
	if (status === 404) return 'engine-not-found'
	if (status === 409) return 'engine-conflict'
	if (status >= 500) return 'engine-failed'
	return 'engine-refused'
}

/** The longest engine message kept (an engine's text is not ours to carry whole). */
export const DOCKER_ENGINE_MESSAGE_MAX_CHARS = 1000

/** The engine answered a request with a non-2xx status; `engineMessage` is its JSON `message`. */
export class DockerEngineRequestError extends SandboxError {
	override readonly name = 'DockerEngineRequestError'
	declare readonly reason:
		| 'engine-bad-request'
		| 'engine-not-found'
		| 'engine-conflict'
		| 'engine-failed'
		| 'engine-refused'
	readonly method: string
	/** The API path without the version prefix or the query (`/containers/create`). */
	readonly path: string
	readonly status: number
	readonly engineMessage: string

	constructor(
		method: string,
		path: string,
		status: number,
		engineMessage: string,
		options: SandboxErrorOptions = {},
	) {
		const message = engineMessage.slice(0, DOCKER_ENGINE_MESSAGE_MAX_CHARS)
		super(
			`the Docker engine refused ${method} ${path} with HTTP ${status}: ${message || '(no message)'}`,
			dockerRefusalReason(status),
			{ retryable: status === 503, ...options },
		)
		this.method = method
		this.path = path
		this.status = status
		this.engineMessage = message
	}
}

/** An engine reply past its size bound, or not the JSON the API documents. */
export class DockerEngineReplyError extends SandboxError {
	override readonly name = 'DockerEngineReplyError'
	declare readonly reason: 'engine-reply-too-large' | 'engine-reply-malformed'
	readonly method: string
	readonly path: string
	/** The bound a too-large reply crossed. */
	readonly maxReplyBytes: number

	constructor(
		reason: 'engine-reply-too-large' | 'engine-reply-malformed',
		method: string,
		path: string,
		maxReplyBytes: number,
		options: SandboxErrorOptions = {},
	) {
		super(
			reason === 'engine-reply-too-large'
				? `the Docker engine's reply to ${method} ${path} passed ${maxReplyBytes} bytes; it was cut off (is the socket a Docker engine?)`
				: `the Docker engine's reply to ${method} ${path} is not the JSON the Engine API documents (is the socket a Docker engine?)`,
			reason,
			options,
		)
		this.method = method
		this.path = path
		this.maxReplyBytes = maxReplyBytes
	}
}

/**
 * The engine took the container but dropped limits it was asked for (a rootless engine on cgroup
 * v1 records `Memory: 0`, `PidsLimit: 0`): the sandbox is not started unbounded.
 */
export class DockerLimitsNotEnforcedError extends SandboxError {
	override readonly name = 'DockerLimitsNotEnforcedError'
	/** The `HostConfig` fields the engine did not keep (`Memory`, `PidsLimit`, `NanoCpus`). */
	readonly dropped: readonly string[]

	constructor(dropped: readonly string[], options: SandboxErrorOptions = {}) {
		super(
			`the Docker engine did not keep the limits asked for (${dropped.join(', ')}); a rootless engine on cgroup v1 cannot enforce them: use a rootful engine, or a host with cgroup v2 delegated to the engine's user`,
			'limits-not-enforced',
			options,
		)
		this.dropped = [...dropped]
	}
}
