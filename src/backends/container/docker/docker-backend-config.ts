/**
 * `runtime: 'docker'` of `ContainerBackendConfig`, validated once: the engine's socket
 * (`backend.dockerHost`, else `DOCKER_HOST`, else `/var/run/docker.sock`; `unix://` only), an image
 * reference the engine has, and the settings an engine's containers share with the OCI runtimes.
 * The settings of the OCI runtimes the engine replaces (a runtime binary, gVisor's platform, the
 * umoci cache, host uids, host tools) are refused by name rather than ignored.
 */
import { tmpdir } from 'node:os'
import { isAbsolute } from 'node:path'
import {
	CONFIG_SITE,
	describeReceived,
	refuseUnknownKeys,
	requireObject,
	requireString,
} from '../../../contract/argument-validators.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import {
	type ContainerBackendConfig,
	resolveContainerLabels,
	resolveContainerReadiness,
} from '../container-backend-config.js'
import { dockerSocketPath } from './docker-engine-client.js'

export interface ResolvedDockerBackendConfig {
	readonly socketPath: string
	readonly image: string
	readonly stateDir: string
	readonly readyTimeoutMs: number
	readonly readyPollIntervalMs: number
	readonly warmPoolSize: number
	readonly labels: Readonly<Record<string, string>>
}

const DOCKER_KEYS = [
	'tier',
	'runtime',
	'image',
	'dockerHost',
	'stateDir',
	'readyTimeoutMs',
	'readyPollIntervalMs',
	'warmPoolSize',
	'labels',
	'network',
] as const satisfies readonly (keyof ContainerBackendConfig)[]

const NOT_FOR_DOCKER: Readonly<Record<string, string>> = {
	runtimePath: 'the engine runs its own OCI runtime',
	runscPlatform: "gVisor's platform is the engine's runtime setting",
	imageCacheDir: 'the engine stores its images',
	sandboxUidRange: `the engine's containers run as one unprivileged user`,
	defaultLimits: 'the engine enforces the limits through its own cgroups',
	tools: 'no host program is run',
}

export function resolveDockerBackendConfig(
	config: ContainerBackendConfig,
	hostEnv: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedDockerBackendConfig {
	const raw = requireObject(CONFIG_SITE, 'backend', config)
	for (const [key, why] of Object.entries(NOT_FOR_DOCKER)) {
		if (raw[key] !== undefined)
			throw new SandboxConfigError(`backend.${key}`, `not used with runtime 'docker': ${why}`)
	}
	refuseUnknownKeys(CONFIG_SITE, 'backend', raw, DOCKER_KEYS)
	if (raw.network !== undefined && raw.network !== 'none') {
		throw new SandboxConfigError(
			'backend.network',
			"only 'none' is supported: every container gets NetworkMode 'none', and the host reaches the agent over a unix socket",
		)
	}
	const dockerHost =
		raw.dockerHost === undefined
			? hostEnv.DOCKER_HOST
			: requireString(CONFIG_SITE, 'backend.dockerHost', raw.dockerHost)
	const stateDir = raw.stateDir ?? tmpdir()
	if (typeof stateDir !== 'string' || !isAbsolute(stateDir))
		throw CONFIG_SITE.refuse('backend.stateDir', 'an absolute path', describeReceived(stateDir))
	return {
		socketPath: dockerSocketPath(
			dockerHost,
			raw.dockerHost === undefined ? 'DOCKER_HOST' : 'backend.dockerHost',
		),
		image: requireString(CONFIG_SITE, 'backend.image', raw.image),
		stateDir,
		...resolveContainerReadiness(raw),
		labels: resolveContainerLabels(raw.labels),
	}
}
