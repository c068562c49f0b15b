/**
 * The Sandbox a Kubernetes task acquire hands out: the shared agent-backed `AgentSandbox` (exec
 * through the reserve-before-admission controller, files, walkFiles via exec, terminals and tcp
 * connections it owns) behind this tier's gate. After `destroy()` every call throws
 * `KubernetesSandboxDestroyedError`; once the lease found the object gone, every call throws
 * `KubernetesSandboxGoneError` without dialing; an `unauthorized` guest answer becomes
 * `KubernetesAgentUnauthorizedError`, and a guest that fenced itself (`agent_retiring`)
 * `KubernetesAgentRetiringError` (which retires nothing); a Service FQDN that does not resolve becomes
 * `KubernetesAgentAddressUnresolvableError`. `setNetworkPolicy` is absent unless the backend has
 * `egress.perSandbox` (then the handle is a `KubernetesPerSandboxEgressTaskSandbox`, which adds
 * it); `spawnDetached` is absent on purpose: there is no detached spawn on this tier. `events()`
 * is the wrapped `AgentSandbox`'s own stream; the lease finding the object gone is this tier's
 * guest death (`guest-died`, exit and signal unknown), which ends it.
 */
import '../../contract/async-dispose.js'
import { findCauseOfType } from '../../contract/cause-chain.js'
import { SandboxDestroyedError } from '../../contract/errors.js'
import type {
	OpenTerminalOptions,
	Sandbox,
	SandboxAttachProcessOptions,
	SandboxDestroyOptions,
	SandboxDirectoryPage,
	SandboxEnvironment,
	SandboxExecOptions,
	SandboxExecResult,
	SandboxExposedPort,
	SandboxExposePortOptions,
	SandboxFileEntry,
	SandboxFileStat,
	SandboxListDirectoryOptions,
	SandboxListFilesOptions,
	SandboxPathOptions,
	SandboxProcess,
	SandboxReadFileOptions,
	SandboxReadFileStreamOptions,
	SandboxRecursiveOptions,
	SandboxSpawnOptions,
	SandboxStatus,
	SandboxTcpConnection,
	SandboxTcpConnectOptions,
	SandboxWalkFilesOptions,
	SandboxWatchEvent,
	SandboxWatchOptions,
	SandboxWriteFileOptions,
	TerminalSession,
} from '../../contract/sandbox.js'
import type { SandboxEventsOptions, SandboxLifecycleEvent } from '../../contract/sandbox-events.js'
import { RemoteCancellationUnknownError } from '../../host/refusals/refusal-errors.js'
import type { AgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import { checkDestroyOptions } from '../../host/sandbox/sandbox-arguments.js'
import { kubernetesCallError } from './guest-call-errors.js'
import {
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
} from './kubernetes-sandbox-errors.js'
import type { KubernetesLeaseRenewal } from './lease-renewal.js'
import type { DialTracker, PodRebinder } from './pod-rebind.js'

export interface KubernetesTaskSandboxOptions {
	readonly inner: AgentSandbox
	/** The agent's address: what a resolver failure names. */
	readonly host: string
	readonly addressMode: 'service' | 'pod-ip'
	readonly lease?: KubernetesLeaseRenewal
	/** `pod-ip` mode: follows a replaced pod after a call that never obtained a socket. */
	readonly podRebind?: { readonly tracker: DialTracker; readonly rebinder: PodRebinder }
}

export class KubernetesTaskSandbox implements Sandbox {
	readonly id: string
	readonly rootDir: string
	readonly environment: SandboxEnvironment
	readonly #inner: AgentSandbox
	readonly #options: KubernetesTaskSandboxOptions
	#destroyed = false
	#gone: Error | undefined
	#teardown: Promise<void> | undefined

	/** @internal The provider builds it. */
	constructor(options: KubernetesTaskSandboxOptions) {
		this.#options = options
		this.#inner = options.inner
		this.id = options.inner.id
		this.rootDir = options.inner.rootDir
		this.environment = options.inner.environment
	}

	get status(): SandboxStatus {
		if (this.#destroyed || this.#gone) return 'destroyed'
		return this.#inner.status
	}

	/** True once the lease found the cluster object deleted under this handle. */
	get gone(): boolean {
		return this.#gone !== undefined
	}

	/**
	 * Called by the lease when the object is gone: later calls throw without dialing, and the
	 * guest's death is declared on the transport (calls in flight end, `events()` tells
	 * `guest-died`). Deleting the object ends the pod, so that is what this tier sees of a death.
	 */
	markGone(cause: Error): void {
		if (this.#gone) return
		this.#gone = cause
		if (this.#destroyed) return
		this.#inner.transport.liveness.declare({ exitCode: null, signal: null, sandboxId: this.id })
	}

	exec(
		command: string,
		args: readonly string[] = [],
		options: SandboxExecOptions = {},
	): Promise<SandboxExecResult> {
		return this.#call('exec', () => this.#inner.exec(command, args, options))
	}

	/** The same detached-execution engine as every tier: the agent in the pod keeps the output. */
	spawn(
		command: string,
		args: readonly string[] = [],
		options: SandboxSpawnOptions = {},
	): Promise<SandboxProcess> {
		return this.#call('spawn', () => this.#inner.spawn(command, args, options))
	}

	attachProcess(id: string, options: SandboxAttachProcessOptions = {}): Promise<SandboxProcess> {
		return this.#call('attachProcess', () => this.#inner.attachProcess(id, options))
	}

	writeFile(
		path: string,
		content: string | Uint8Array,
		options: SandboxWriteFileOptions = {},
	): Promise<void> {
		return this.#call('writeFile', () => this.#inner.writeFile(path, content, options))
	}

	readFile(path: string, options: SandboxReadFileOptions = {}): Promise<Buffer> {
		return this.#call('readFile', () => this.#inner.readFile(path, options))
	}

	readFileStream(path: string, options: SandboxReadFileStreamOptions = {}): AsyncIterable<Buffer> {
		this.admit('readFileStream')
		return this.#iterate('readFileStream', this.#inner.readFileStream(path, options))
	}

	listFiles(
		rootPath: string,
		options: SandboxListFilesOptions = {},
	): Promise<readonly SandboxFileEntry[]> {
		return this.#call('listFiles', () => this.#inner.listFiles(rootPath, options))
	}

	walkFiles(rootPath: string, options: SandboxWalkFilesOptions): AsyncIterable<SandboxFileEntry> {
		this.admit('walkFiles')
		return this.#iterate('walkFiles', this.#inner.walkFiles(rootPath, options))
	}

	stat(path: string, options: SandboxPathOptions = {}): Promise<SandboxFileStat> {
		return this.#call('stat', () => this.#inner.stat(path, options))
	}

	exists(path: string, options: SandboxPathOptions = {}): Promise<boolean> {
		return this.#call('exists', () => this.#inner.exists(path, options))
	}

	remove(path: string, options: SandboxRecursiveOptions = {}): Promise<void> {
		return this.#call('remove', () => this.#inner.remove(path, options))
	}

	mkdir(path: string, options: SandboxRecursiveOptions = {}): Promise<void> {
		return this.#call('mkdir', () => this.#inner.mkdir(path, options))
	}

	rename(from: string, to: string, options: SandboxPathOptions = {}): Promise<void> {
		return this.#call('rename', () => this.#inner.rename(from, to, options))
	}

	listDirectory(
		path: string,
		options: SandboxListDirectoryOptions = {},
	): Promise<SandboxDirectoryPage> {
		return this.#call('listDirectory', () => this.#inner.listDirectory(path, options))
	}

	watch(path: string, options: SandboxWatchOptions = {}): AsyncIterable<SandboxWatchEvent> {
		this.admit('watch')
		return this.#iterate('watch', this.#inner.watch(path, options))
	}

	/**
	 * The wrapped sandbox's lifecycle stream (sandbox-event-log.ts): exec started / exited, the
	 * object gone as `guest-died`, `destroyed` once the object is deleted. Like every tier's, it can
	 * still be read back by cursor once it ended.
	 */
	events(options: SandboxEventsOptions = {}): AsyncIterable<SandboxLifecycleEvent> {
		try {
			return this.#inner.events(options)
		} catch (error) {
			throw this.#translate('events', error)
		}
	}

	openTerminal(options: OpenTerminalOptions): Promise<TerminalSession> {
		return this.#call('openTerminal', () => this.#inner.openTerminal(options))
	}

	openTcpConnection(options: SandboxTcpConnectOptions): Promise<SandboxTcpConnection> {
		return this.#call('openTcpConnection', () => this.#inner.openTcpConnection(options))
	}

	/** Served by this host (the one running the library), over the agent's tcp channel. */
	exposePort(port: number, options?: SandboxExposePortOptions): Promise<SandboxExposedPort> {
		return this.#call('exposePort', () => this.#inner.exposePort(port, options))
	}

	/** `destroy()`, for `await using sandbox = await provider.create()`. */
	[Symbol.asyncDispose](): Promise<void> {
		return this.destroy()
	}

	/**
	 * Kills and awaits every terminal, stops the lease, deletes the claim or Sandbox (already gone
	 * counts as released). Idempotent; concurrent calls share one teardown.
	 */
	destroy(options: SandboxDestroyOptions = {}): Promise<void> {
		try {
			// Refused before anything stops: a bad argument leaves the sandbox as it was.
			checkDestroyOptions(options)
		} catch (error) {
			return Promise.reject(error)
		}
		if (!this.#teardown) {
			this.#destroyed = true
			this.#options.lease?.stop()
			const teardown = this.#inner.destroy(options)
			this.#teardown = teardown
			teardown.catch(() => {
				if (this.#teardown === teardown) this.#teardown = undefined
			})
		}
		return this.#teardown
	}

	/** Throws once destroyed or gone, before anything is dialed or sent. */
	protected admit(operation: string): void {
		if (this.#destroyed) throw new KubernetesSandboxDestroyedError(this.id, operation)
		if (this.#gone) throw new KubernetesSandboxGoneError(this.id, operation, { cause: this.#gone })
	}

	async #call<T>(operation: string, call: () => Promise<T>): Promise<T> {
		this.admit(operation)
		const rebind = this.#options.podRebind
		const before = rebind?.tracker.snapshot()
		try {
			return await call()
		} catch (error) {
			if (rebind && before && (await this.#followReplacedPod(rebind, before, error))) {
				try {
					return await call()
				} catch (retryError) {
					throw this.#translate(operation, retryError)
				}
			}
			throw this.#translate(operation, error)
		}
	}

	/**
	 * Whether a failed call may be retried on a replaced pod: it never obtained a socket, the
	 * handle is still live, it is not a command whose cancellation went unconfirmed (never
	 * retried), and the pod was indeed replaced — in which case the transport now points at it.
	 */
	async #followReplacedPod(
		rebind: NonNullable<KubernetesTaskSandboxOptions['podRebind']>,
		before: ReturnType<DialTracker['snapshot']>,
		error: unknown,
	): Promise<boolean> {
		if (this.#destroyed || this.#gone) return false
		if (findCauseOfType(error, RemoteCancellationUnknownError)) return false
		if (!rebind.tracker.connectFailedSince(before)) return false
		return rebind.rebinder.rebind()
	}

	async *#iterate<T>(
		operation: string,
		source: AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		try {
			yield* source
		} catch (error) {
			throw this.#translate(operation, error)
		}
	}

	#translate(operation: string, error: unknown): unknown {
		if (this.#gone && !(error instanceof SandboxDestroyedError)) {
			return new KubernetesSandboxGoneError(this.id, operation, { cause: error })
		}
		return kubernetesCallError(error, {
			sandboxId: this.id,
			operation,
			tier: 'task',
			addressMode: this.#options.addressMode,
			host: this.#options.host,
		})
	}
}
