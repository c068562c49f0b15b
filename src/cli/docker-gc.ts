/**
 * `gc`'s Docker half: the containers of `runtime: 'docker'` sandboxes whose host died, found by the
 * reaper's label on the engine `DOCKER_HOST` names (else the default socket, when it exists) and
 * removed with their host directory when it lies in the CLI's state directory. An engine that
 * `DOCKER_HOST` names and that does not answer is a failure; with no `DOCKER_HOST` and no default
 * socket there is no engine to look at, and a default socket nobody answers is only noted.
 */
import { lstat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import {
	DEFAULT_DOCKER_SOCKET,
	DockerEngineClient,
	dockerSocketPath,
} from '../backends/container/docker/docker-engine-client.js'
import { DockerEngineUnreachableError } from '../backends/container/docker/docker-errors.js'
import {
	type DockerLeftover,
	type DockerReapResult,
	reapDockerLeftovers,
} from '../backends/container/docker/docker-reaper.js'

/** One gc pass over an engine (listing and every removal) gives up after this long. */
export const DOCKER_GC_TIMEOUT_MS = 300_000

export interface DockerGarbageReport {
	/** Printed on stdout, one per container. */
	readonly lines: readonly string[]
	/** Printed on stderr; a non-empty list makes gc exit 1. */
	readonly failures: readonly string[]
	/** Printed on stderr, not a failure. */
	readonly notes: readonly string[]
}

const EMPTY: DockerGarbageReport = { lines: [], failures: [], notes: [] }

function describe(leftover: DockerLeftover): string {
	const sandbox = leftover.sandboxId === '' ? '' : ` of sandbox ${leftover.sandboxId}`
	return `docker container ${leftover.containerId.slice(0, 12)}${sandbox}`
}

function detail(error: unknown): string {
	return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** The lines `gc` prints for the Docker reaper's result (pure). */
export function formatDockerReport(result: DockerReapResult, dryRun: boolean): DockerGarbageReport {
	const verb = dryRun ? 'would reap' : 'reaped'
	return {
		lines: result.removed.map(
			(leftover) => `${verb} ${describe(leftover)} (owner-gone) ${leftover.owner}`,
		),
		failures: result.failed.map(
			({ leftover, error }) =>
				`namzu-sandbox: gc could not reap ${describe(leftover)}: ${detail(error)}`,
		),
		notes: [],
	}
}

/** The engine's socket and whether `DOCKER_HOST` named it, or undefined when there is none here. */
async function engineSocket(
	env: Readonly<Record<string, string | undefined>>,
): Promise<{ socketPath: string; configured: boolean } | undefined> {
	const dockerHost = env.DOCKER_HOST
	if (dockerHost !== undefined && dockerHost !== '') {
		return { socketPath: dockerSocketPath(dockerHost, 'DOCKER_HOST'), configured: true }
	}
	const present = await lstat(DEFAULT_DOCKER_SOCKET).then(
		() => true,
		() => false,
	)
	return present ? { socketPath: DEFAULT_DOCKER_SOCKET, configured: false } : undefined
}

export async function collectDockerGarbage(options: {
	readonly dryRun: boolean
	readonly stateDir: string | undefined
	readonly env?: Readonly<Record<string, string | undefined>>
}): Promise<DockerGarbageReport> {
	let engine: { socketPath: string; configured: boolean } | undefined
	try {
		engine = await engineSocket(options.env ?? process.env)
	} catch (error) {
		return {
			...EMPTY,
			failures: [`namzu-sandbox: gc did not look for Docker containers: ${detail(error)}`],
		}
	}
	if (engine === undefined) return EMPTY
	try {
		const result = await reapDockerLeftovers({
			client: new DockerEngineClient(engine.socketPath),
			stateDir: options.stateDir ?? tmpdir(),
			dryRun: options.dryRun,
			signal: AbortSignal.timeout(DOCKER_GC_TIMEOUT_MS),
		})
		return formatDockerReport(result, options.dryRun)
	} catch (error) {
		if (!engine.configured && error instanceof DockerEngineUnreachableError) {
			return {
				...EMPTY,
				notes: [
					`namzu-sandbox: no Docker engine answers at ${engine.socketPath}: its containers were not looked at`,
				],
			}
		}
		return {
			...EMPTY,
			failures: [`namzu-sandbox: gc could not list Docker containers: ${detail(error)}`],
		}
	}
}
