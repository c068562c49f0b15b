/**
 * One Docker sandbox: a host directory of its own (`<stateDir>/namzu-docker-<id>`, root's, 0700)
 * holding the agent's socket once adopted, a container made and started through the Engine API,
 * the agent's readiness and the privilege probe. `release()` force-removes the container and then
 * the directory, once however many callers ask (they share one promise), and rejects unless the
 * engine confirmed the removal (or the container was already gone): an aborted or refused remove
 * is never reported as done.
 */
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { hostname, totalmem } from 'node:os'
import { join } from 'node:path'
import { raceSignal } from '../../../common/bounded-promise.js'
import { isRecord } from '../../../common/is-record.js'
import { AgentTransport } from '../../../host/transport/agent-transport.js'
import type { GuestExit } from '../../../host/transport/transport-errors.js'
import { guestExitOf } from '../../machine/cgroups/guest-exit.js'
import { readProcessIdentity } from '../../machine/claims/process-identity.js'
import { newSandboxId } from '../../machine/claims/sandbox-id.js'
import { agentSettingsFrom, buildAgentEnvironment } from '../../machine/launch/agent-environment.js'
import { probeInstancePrivileges } from '../../machine/launch/instance-privilege-probe.js'
import { MACHINE_MAX_REQUEST_FRAME_BYTES } from '../../machine/launch/transport-options.js'
import { LocalSandboxCleanupError, LocalSandboxStartError } from '../../machine/machine-errors.js'
import { sandboxSeccompFilter } from '../../machine/seccomp/seccomp-filter.js'
import { resolveSandboxLimits } from '../../machine/spec/sandbox-limits.js'
import { resolveStateBase } from '../../machine/workspace/sandbox-directories.js'
import { AGENT_SOCKET_NAME, adoptAgentSocket } from '../container-agent-socket.js'
import type { ResolvedContainerSandboxLayout } from '../container-layout.js'
import { layoutRootsEnvironment } from '../container-layout-mounts.js'
import type { ContainerSandboxSpec } from '../container-sandbox-spec.js'
import { CONTAINER_HOME_DIR, CONTAINER_SOCKET_PATH, CONTAINER_WORKSPACE } from '../oci-config.js'
import {
	DOCKER_ID_LABEL,
	DOCKER_IMAGE_NODE,
	DOCKER_OWNER_LABEL,
	DOCKER_SANDBOX_LABEL,
	DOCKER_SANDBOX_UID,
	DOCKER_STATE_LABEL,
	dockerContainerBody,
	parseHardLimits,
} from './docker-container-body.js'
import type { DockerEngineClient, DockerEngineKind } from './docker-engine-client.js'
import { DockerEngineRequestError, DockerLimitsNotEnforcedError } from './docker-errors.js'
import { dockerLayout } from './docker-layout.js'

/** A Docker sandbox's host directory: `<stateDir>/namzu-docker-<id>`. */
export const DOCKER_STATE_PREFIX = 'namzu-docker-'
const REMOVE_BUDGET_MS = 30_000
/**
 * How long the engine may take to answer a container create. The create is never aborted with the
 * caller's signal: an engine that received it makes the container anyway, and only its answer
 * names what to remove (an abort answers the caller at once; the release waits for the create).
 */
const CREATE_BUDGET_MS = 60_000

export interface DockerInstanceContext {
	readonly client: DockerEngineClient
	readonly image: string
	readonly stateDir: string
	readonly labels: Readonly<Record<string, string>>
	readonly readyTimeoutMs: number
	readonly readyPollIntervalMs: number
	readonly agentPath: string
	readonly layout: ResolvedContainerSandboxLayout
	/** Which engine it is (asked once per provider). */
	readonly engine: () => Promise<DockerEngineKind>
	readonly hostEnv?: Readonly<Record<string, string | undefined>>
}

export interface DockerInstance {
	readonly id: string
	readonly rootDir: string
	readonly transport: AgentTransport
	/** The engine's container id. */
	readonly containerId: string
	hasExited(): boolean
	release(): Promise<void>
}

/** `<hostname>/<pid>/<start time>` of this process: what `DOCKER_OWNER_LABEL` holds. */
export async function dockerOwnerLabel(): Promise<string> {
	const self = await readProcessIdentity(process.pid)
	return `${hostname()}/${process.pid}/${self?.startTime ?? 'unknown'}`
}

/** Removes a container, force (its processes are killed); a container already gone is removed. */
export async function removeDockerContainer(
	client: DockerEngineClient,
	container: string,
	signal: AbortSignal,
): Promise<void> {
	try {
		await client.call({
			method: 'DELETE',
			path: `/containers/${encodeURIComponent(container)}`,
			query: { force: 'true', v: 'true' },
			signal,
		})
	} catch (error) {
		if (error instanceof DockerEngineRequestError && error.status === 404) return
		throw error
	}
}

// long: one start in order (directory, container, socket, readiness, probe), undone as one
export async function startDockerInstance(
	context: DockerInstanceContext,
	spec: ContainerSandboxSpec,
	signal?: AbortSignal,
): Promise<DockerInstance> {
	signal?.throwIfAborted()
	const { client } = context
	const id = newSandboxId()
	const name = `namzu-sbx-${id}`
	const base = await resolveStateBase(context.stateDir)
	const stateRoot = join(base, `${DOCKER_STATE_PREFIX}${id}`)
	const socketDir = join(stateRoot, 'uds')
	const socketPath = join(stateRoot, 'agent.sock')
	const limits = resolveSandboxLimits(spec, { totalMemoryBytes: totalmem() })
	let containerId: string | undefined
	/** The create sent to the engine, settled or not: the release waits for it. */
	let creating: Promise<Record<string, unknown>> | undefined
	let exited = false
	const watching = new AbortController()
	let releasing: Promise<void> | undefined
	const release = () => {
		releasing ??= (async () => {
			watching.abort()
			const failures: unknown[] = []
			// A create still under way (the caller aborted) is waited for; one that never answered
			// with an Id is removed by its name, which only this sandbox uses (absent: nothing to do).
			if (containerId === undefined && creating !== undefined) {
				const late = await creating.catch(() => undefined)
				containerId = typeof late?.Id === 'string' && late.Id !== '' ? late.Id : name
			}
			if (containerId !== undefined) {
				await removeDockerContainer(
					client,
					containerId,
					AbortSignal.timeout(REMOVE_BUDGET_MS),
				).catch((error: unknown) => failures.push(error))
			}
			// The directory goes only once the container is: a remove that failed keeps the record.
			if (failures.length === 0) {
				await rm(stateRoot, { recursive: true, force: true }).catch((error: unknown) =>
					failures.push(error),
				)
			}
			const failed = LocalSandboxCleanupError.ofFailures(failures)
			if (failed) throw failed
		})()
		return releasing
	}
	try {
		await mkdir(stateRoot, { mode: 0o700 })
		// The agent's uid binds its socket in socketDir; the host dials it only once moved out (below).
		const layout = dockerLayout(context.layout, stateRoot)
		const workspace = join(stateRoot, 'workspace')
		for (const dir of [socketDir, workspace, ...layout.ownDirs]) {
			await mkdir(dir, { recursive: true, mode: dir === socketDir ? 0o700 : 0o755 })
			await chown(dir, DOCKER_SANDBOX_UID, DOCKER_SANDBOX_UID)
		}
		const env: Record<string, string> = {
			...buildAgentEnvironment({
				workspace: CONTAINER_WORKSPACE,
				homeDir: CONTAINER_HOME_DIR,
				nodePath: DOCKER_IMAGE_NODE,
				user: 'sandbox',
				callerEnv: spec.env,
				agentSettings: agentSettingsFrom(context.hostEnv ?? process.env),
				workloadCgroups: [],
			}),
			NAMZU_AGENT_UNIX_PATH: CONTAINER_SOCKET_PATH,
			NAMZU_AGENT_INHERITED_FDS: '',
		}
		const { NAMZU_AGENT_VSOCK_PORT: _port, ...listening } = env
		const agentEnv = {
			...listening,
			...layoutRootsEnvironment(layout),
		}
		const filter = JSON.stringify(
			sandboxSeccompFilter({ allowUserNamespaces: spec.allowUserNamespaces === true }).oci(),
		)
		let seccomp = filter
		if ((await context.engine()) === 'podman') {
			seccomp = join(stateRoot, 'seccomp.json')
			await writeFile(seccomp, filter, { mode: 0o600 })
		}
		const body = dockerContainerBody({
			image: context.image,
			env: agentEnv,
			labels: {
				...context.labels,
				[DOCKER_SANDBOX_LABEL]: '1',
				[DOCKER_ID_LABEL]: id,
				[DOCKER_OWNER_LABEL]: await dockerOwnerLabel(),
				[DOCKER_STATE_LABEL]: stateRoot,
			},
			limits,
			agentBundle: context.agentPath,
			socketDir,
			workspace,
			seccomp,
			binds: layout.binds,
			ulimits: parseHardLimits(await readFile('/proc/self/limits', 'utf8')),
		})
		creating = client.json({
			method: 'POST',
			path: '/containers/create',
			query: { name },
			json: body,
			signal: AbortSignal.timeout(CREATE_BUDGET_MS),
		})
		const created = await raceSignal(creating, signal)
		if (typeof created.Id !== 'string' || created.Id === '') {
			throw new LocalSandboxStartError(id, 'the engine answered the create with no container Id', {
				stderrTail: '',
			})
		}
		containerId = created.Id
		const started = containerId
		// An engine that drops a limit (rootless on cgroup v1) says so only in what it recorded.
		const recorded = await client.json({
			method: 'GET',
			path: `/containers/${started}/json`,
			...(signal ? { signal } : {}),
		})
		const dropped = droppedLimits(body.HostConfig, recorded.HostConfig)
		if (dropped.length > 0) throw new DockerLimitsNotEnforcedError(dropped)
		await client.call({
			method: 'POST',
			path: `/containers/${started}/start`,
			...(signal ? { signal } : {}),
		})
		const death = waitForExit(client, started, id, watching.signal).then((exit) => {
			exited = exit !== undefined
			return releasing === undefined ? exit : undefined
		})
		const transport = new AgentTransport(
			{ kind: 'unix', path: socketPath },
			{
				connectRetryIntervalMs: context.readyPollIntervalMs,
				maxRequestFrameBytes: MACHINE_MAX_REQUEST_FRAME_BYTES,
				permanentDialFailure: () => exited,
			},
		)
		transport.liveness.watch(death)
		await adoptAgentSocket(
			join(socketDir, AGENT_SOCKET_NAME),
			socketPath,
			{ gone: () => exited, outputTail: () => containerLogTail(client, started) },
			{ sandboxId: id, timeoutMs: context.readyTimeoutMs, ...(signal ? { signal } : {}) },
		)
		await waitReady(transport, id, context.readyTimeoutMs, signal)
		const instance: DockerInstance = {
			id,
			rootDir: CONTAINER_WORKSPACE,
			transport,
			containerId: started,
			hasExited: () => exited,
			release,
		}
		await probeInstancePrivileges(
			{ ...instance, environment: 'linux-namespace' },
			context.readyTimeoutMs,
			signal,
		)
		return instance
	} catch (error) {
		await release().catch(() => undefined)
		if (signal?.aborted) throw signal.reason
		throw error
	}
}

/** The limit fields asked for that the engine's record does not hold. */
export function droppedLimits(asked: unknown, recorded: unknown): string[] {
	if (!isRecord(asked)) return []
	const kept = isRecord(recorded) ? recorded : {}
	return ['Memory', 'MemorySwap', 'PidsLimit', 'NanoCpus'].filter(
		(field) => asked[field] !== undefined && kept[field] !== asked[field],
	)
}

async function waitReady(
	transport: AgentTransport,
	sandboxId: string,
	timeoutMs: number,
	signal: AbortSignal | undefined,
): Promise<void> {
	const deadline = AbortSignal.timeout(timeoutMs)
	const both = signal ? AbortSignal.any([signal, deadline]) : deadline
	try {
		await transport.healthz(both)
	} catch (error) {
		signal?.throwIfAborted()
		throw new LocalSandboxStartError(
			sandboxId,
			`the agent did not answer within ${timeoutMs} ms`,
			{
				stderrTail: '',
			},
			{ cause: error },
		)
	}
}

/** The guest's end, from the engine's long-poll wait; undefined when the watch was stopped. */
async function waitForExit(
	client: DockerEngineClient,
	container: string,
	sandboxId: string,
	signal: AbortSignal,
): Promise<GuestExit | undefined> {
	try {
		const reply = await client.json({
			method: 'POST',
			path: `/containers/${container}/wait`,
			query: { condition: 'not-running' },
			signal,
		})
		const code = typeof reply.StatusCode === 'number' ? reply.StatusCode : null
		const inspect = await client
			.json({ method: 'GET', path: `/containers/${container}/json`, signal })
			.catch(() => undefined)
		const state = isRecord(inspect?.State) ? inspect.State : {}
		return {
			...guestExitOf({
				sandboxId,
				exit: { code, signal: null },
				confined: true,
				oomKillsAtStart: undefined,
				oomKillsAtExit: undefined,
			}),
			...(typeof state.OOMKilled === 'boolean' ? { oomKilled: state.OOMKilled } : {}),
		}
	} catch {
		return signal.aborted ? undefined : { sandboxId, exitCode: null, signal: null }
	}
}

/** The last of the container's output (`logs`, demultiplexed), for a start that failed. */
async function containerLogTail(client: DockerEngineClient, container: string): Promise<string> {
	const reply = await client
		.call({
			method: 'GET',
			path: `/containers/${container}/logs`,
			query: { stdout: 'true', stderr: 'true', tail: '40' },
			signal: AbortSignal.timeout(5_000),
			maxReplyBytes: 64 * 1024,
		})
		.catch(() => undefined)
	return reply === undefined ? '' : demultiplex(Buffer.from(reply.text, 'latin1'))
}

/** The Engine API's multiplexed log stream (8-byte headers) as text; plain text passes as is. */
export function demultiplex(bytes: Buffer): string {
	const out: Buffer[] = []
	let at = 0
	while (at + 8 <= bytes.length && (bytes[at] === 1 || bytes[at] === 2) && bytes[at + 1] === 0) {
		const size = bytes.readUInt32BE(at + 4)
		out.push(bytes.subarray(at + 8, at + 8 + size))
		at += 8 + size
	}
	return out.length === 0 ? bytes.toString('utf8') : Buffer.concat(out).toString('utf8')
}
