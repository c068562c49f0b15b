/**
 * The succession of gVisor containers behind one runsc sandbox. A memory checkpoint stops the
 * container (`runsc checkpoint`) and the sandbox continues in a new one restored from the image it
 * wrote; a rollback replaces the container with one restored from a checkpoint's image; a fork
 * starts as a restored one. The sandbox is "gone" only when its current container is gone and no
 * replacement is under way, so the host never reports the checkpoint's stop as the guest's death.
 * Every restored container is launched the same way: `runsc restore` in the sandbox's cgroups,
 * SIGUSR2 to its init (passed on to the agent, which binds its socket again), the socket moved
 * into the host-only directory, `healthz`. Each replacement runs under a container id of its own
 * while the replaced one is deleted beside it: `runsc delete` waits for the host's init to reap the
 * stopped sandbox's process, which the next restore does not need.
 */
import { chown, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { pollUntil } from '../../common/poll-until.js'
import { SandboxDestroyedError } from '../../contract/errors.js'
import {
	reidentifyRestoredAgent,
	releaseAgentListener,
} from '../../host/lifecycle/restored-agent.js'
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import { withCgroupJoin } from '../machine/cgroups/cgroup-join.js'
import type { CgroupOwner } from '../machine/cgroups/workload-cgroups.js'
import { waitForAgentReady } from '../machine/launch/wait-for-agent-ready.js'
import {
	AGENT_SOCKET_NAME,
	adoptAgentSocket,
	agentReadyCheck,
	asLaunched,
} from './container-agent-socket.js'
import { ContainerRuntimeCommandError } from './container-errors.js'
import {
	type CreatedContainer,
	createContainer,
	deleteRuntimeContainer,
	runRuntimeCommand,
} from './container-process.js'
import {
	type RunscMemoryControl,
	type RunscRestoreSource,
	runscImageDir,
	writeRunscRecord,
} from './runsc-memory-checkpoints.js'
import { checkpointArgv, type RuntimeInvocation, restoreArgv, signalArgv } from './runtime-argv.js'

/**
 * How long a released agent waits for SIGUSR2 before binding on its own: a host that died between
 * the release and the restore leaves no agent unreachable for longer.
 */
const RELISTEN_BOUND_MS = 60_000

/** What one sandbox's containers share. */
export interface IncarnationContext {
	readonly sandboxId: string
	/**
	 * The first container's id (the sandbox's `namzu-sbx-<id>`); each replacement is `<name>-<n>`,
	 * so a replaced container's deletion never holds up the next one's restore.
	 */
	readonly name: string
	readonly invocation: RuntimeInvocation
	readonly stateRoot: string
	readonly bundle: string
	/** The agent's socket directory (its container path's host side). */
	readonly socketDir: string
	/** The host-only path the host dials. */
	readonly socketPath: string
	readonly workspace: string
	/** The uid and gid the sandbox's processes run as inside gVisor. */
	readonly owner: CgroupOwner
	/** The sandbox's `cgroup.procs` files: every container runs in its groups. */
	readonly procsFiles: readonly string[]
	readonly secrets: readonly string[]
	readonly readyTimeoutMs: number
	/** Names a container's first process on the host-claims record (the reaper's target). */
	readonly recordLauncher: (pid: number) => Promise<void>
}

export class RunscIncarnations implements RunscMemoryControl {
	readonly #context: IncarnationContext
	readonly #transport: AgentTransport
	#current: CreatedContainer | undefined
	#replacing: Promise<unknown> | undefined
	/** The current container's id: the sandbox's name, then `<name>-<n>` for each replacement. */
	#containerId: string
	#replacements = 0
	/** Deletions of replaced containers, under way (each answers its failure, if any). */
	readonly #retiring = new Set<Promise<unknown>>()
	/** Set by `quiesce()`: a teardown has begun, and no container may start after it. */
	#closing = false

	constructor(context: IncarnationContext, transport: AgentTransport) {
		this.#context = context
		this.#transport = transport
		this.#containerId = context.name
	}

	/** The id of the container the sandbox runs in now (what a teardown deletes). */
	get containerId(): string {
		return this.#containerId
	}

	/**
	 * For teardown, before it deletes the current container: no replacement starts after this, and
	 * the one under way (a destroy aborts its restore) has settled, so `containerId` is the last one
	 * and `retired()` covers every replaced container.
	 */
	async quiesce(): Promise<void> {
		this.#closing = true
		await this.#replacing?.catch(() => undefined)
	}

	/**
	 * Settles once every replaced container's deletion has ended (a failed one is not raised: what
	 * it would have ended dies with the sandbox's cgroups, its record with the state root).
	 */
	async retired(): Promise<void> {
		await Promise.all(this.#retiring)
	}

	get current(): CreatedContainer | undefined {
		return this.#current
	}

	/** The first container, made by `create` + `start`. */
	adopt(created: CreatedContainer): void {
		this.#current = created
	}

	/** Whether the sandbox is gone: its container ended and nothing replaces it. */
	isGone(): boolean {
		return this.#replacing === undefined && this.#current?.isGone() === true
	}

	/** Settles once the sandbox is gone (a replaced container's end is not its end). */
	async gone(): Promise<void> {
		for (;;) {
			const current = this.#current
			if (current === undefined) return
			await current.gone
			await this.#replacing?.catch(() => undefined)
			if (this.#current === current) return
		}
	}

	/** A new container from `imagePath`, its agent listening again and answering `healthz`. */
	async launch(imagePath: string, signal?: AbortSignal): Promise<void> {
		const { invocation, stateRoot, bundle, sandboxId } = this.#context
		const signalOption = signal ? { signal } : {}
		const pidFile = join(stateRoot, 'container.pid')
		await rm(pidFile, { force: true })
		const created = await createContainer({
			runtime: 'runsc',
			argv: withCgroupJoin(
				this.#context.procsFiles,
				restoreArgv(invocation, { containerId: this.#containerId, bundle, imagePath, pidFile }),
			),
			fds: [],
			secrets: this.#context.secrets,
			...signalOption,
		})
		this.#current = created
		const pid = Number((await readFile(pidFile, 'utf8')).trim())
		if (Number.isSafeInteger(pid)) await this.#context.recordLauncher(pid)
		await this.#relisten(created, signal)
		await waitForAgentReady({
			sandboxId,
			agent: asLaunched(created, pid),
			ready: agentReadyCheck(this.#transport, this.#context.socketDir, this.#context.socketPath),
			timeoutMs: this.#context.readyTimeoutMs,
			...signalOption,
		})
	}

	/** SIGUSR2 to the container's init (tini passes it on), then the new socket adopted. */
	async #relisten(created: CreatedContainer, signal?: AbortSignal): Promise<void> {
		const { invocation, socketDir, socketPath, sandboxId, readyTimeoutMs } = this.#context
		const id = this.#containerId
		await runRuntimeCommand('runsc', 'kill', signalArgv(invocation, id, 'USR2'), signal)
		await adoptAgentSocket(
			join(socketDir, AGENT_SOCKET_NAME),
			socketPath,
			{ gone: () => created.isGone(), outputTail: () => created.outputTail() },
			{ sandboxId, timeoutMs: readyTimeoutMs, ...(signal ? { signal } : {}) },
		)
	}

	/** One replacement at a time; the sandbox counts as alive while it runs. */
	async #replace<T>(operation: 'checkpoint' | 'rollback', run: () => Promise<T>): Promise<T> {
		if (this.#closing) throw new SandboxDestroyedError(this.#context.sandboxId, operation)
		const replacing = run()
		this.#replacing = replacing
		try {
			return await replacing
		} finally {
			if (this.#replacing === replacing) this.#replacing = undefined
		}
	}

	capture(
		dir: string,
		takeWorkspace: (workspace: string) => Promise<void>,
		signal?: AbortSignal,
	): Promise<void> {
		return this.#replace('checkpoint', () => this.#capture(dir, takeWorkspace, signal))
	}

	async #capture(
		dir: string,
		takeWorkspace: (workspace: string) => Promise<void>,
		signal?: AbortSignal,
	): Promise<void> {
		const { invocation } = this.#context
		const current = this.#current
		if (current === undefined) throw new Error('unreachable: a capture before the first container')
		// gVisor cannot save a socket bound on the host: the agent lets go of its listener first.
		await releaseAgentListener(this.#transport, {
			relistenAfterMs: RELISTEN_BOUND_MS,
			...(signal ? { signal } : {}),
		})
		try {
			await this.#listenerClosed(current)
			const image = runscImageDir(dir)
			const id = this.#containerId
			await runRuntimeCommand('runsc', 'checkpoint', checkpointArgv(invocation, id, image))
		} catch (error) {
			// Not saved: the container still runs; its agent binds again.
			if (!current.isGone()) await this.#relisten(current).catch(() => undefined)
			throw error
		}
		await current.gone
		// The stopped container is forgotten beside the restore, not before it: its delete waits
		// for the host's init to reap the sandbox's process, while the restore needs none of it.
		void this.#retire()
		try {
			await takeWorkspace(this.#context.workspace)
			await writeRunscRecord(dir, this.#context.owner)
		} catch (error) {
			// Its files not taken (no room, an abort): the sandbox still goes on from the image, which
			// no abort stops, and only then the capture fails (the store removes the image with it).
			await this.launch(runscImageDir(dir))
			throw error
		}
		// The sandbox goes on from the image it just wrote: its processes continue.
		await this.launch(runscImageDir(dir), signal)
	}

	rollback(source: RunscRestoreSource, signal?: AbortSignal): Promise<void> {
		return this.#replace('rollback', async () => {
			const { workspace, socketDir } = this.#context
			const current = this.#current
			const deleting = this.#retire()
			// Its processes are gone (or the delete failed) before the workspace is replaced.
			const failure = await Promise.race([current?.gone.then(() => undefined), deleting])
			if (failure !== undefined) throw failure
			await current?.gone
			// The image's processes run as its uid: the files they reach are theirs.
			await chown(workspace, source.owner.uid, source.owner.gid)
			await chown(socketDir, source.owner.uid, source.owner.gid)
			await source.fill(workspace, signal)
			await this.launch(source.imagePath, signal)
			// The image's entropy and boot id are the checkpoint's: this sandbox gets its own again.
			await reidentifyRestoredAgent(this.#transport, signal ? { signal } : {})
		})
	}

	/**
	 * `runsc delete --force` of the current container (ending it if it runs), under way while the
	 * next one gets an id of its own; answers the delete's failure, if any (teardown awaits it).
	 */
	#retire(): Promise<unknown> {
		const deleting: Promise<unknown> = deleteRuntimeContainer(
			this.#context.invocation,
			this.#containerId,
		).then(
			() => undefined,
			(error: unknown) => error ?? new Error('runsc delete failed'),
		)
		this.#retiring.add(deleting)
		void deleting.then(() => this.#retiring.delete(deleting))
		this.#replacements += 1
		this.#containerId = `${this.#context.name}-${this.#replacements}`
		return deleting
	}

	/**
	 * Until the agent's listener and its connections are closed inside the sentry: a socket bound
	 * through `--host-uds` (its host path in the sentry's own table of unix sockets) fails the
	 * checkpoint and ends the sandbox.
	 */
	async #listenerClosed(current: CreatedContainer): Promise<void> {
		const pid = Number(
			(await readFile(join(this.#context.stateRoot, 'container.pid'), 'utf8')).trim(),
		)
		const bound = join(this.#context.socketDir, AGENT_SOCKET_NAME)
		const closed = await pollUntil(async () => {
			if (current.isGone()) return true
			const table = await readFile(`/proc/${pid}/net/unix`, 'utf8').catch(() => '')
			return !table.split('\n').some((line) => line.endsWith(` ${bound}`))
		}, performance.now() + this.#context.readyTimeoutMs)
		if (!closed) {
			throw new ContainerRuntimeCommandError('runsc', 'checkpoint', {
				stderrTail: `not run: the agent kept its socket ${bound} open`,
			})
		}
	}
}
