/**
 * One container of a pod across its restarts: prepare (env, identity, volumes), launch, probe the
 * agent, and on exit either restart in place (same pod, same address, new process,
 * `restartCount + 1`, back-off) or stop for good, per `restartPolicy`. Graceful termination runs
 * the `preStop` exec hook, SIGTERMs pid 1, waits out the grace period and SIGKILLs what is left.
 * Faults (`ErrImagePull`) are flags the loop honours on its next turn.
 */
import { probeAgent } from './agent-probe.js'
import { type ContainerLaunch, ContainerProcess } from './container-process.js'
import type { Container, ContainerStateTerminated, Pod } from './kube-types.js'
import type { ContainerPhase, ContainerSnapshot } from './pod-status.js'
import { terminationReason } from './pod-status.js'
import { restartBackoffMs, shouldRestart } from './restart-policy.js'

/** What `prepare` produced: a launch, or the waiting reason a real kubelet would show. */
export type PreparedLaunch =
	| { readonly ok: true; readonly launch: ContainerLaunch; readonly probePort?: number }
	| { readonly ok: false; readonly reason: string; readonly message: string }

export interface ContainerRunnerDeps {
	readonly pod: () => Pod
	readonly container: Container
	readonly address: string
	readonly prepare: () => Promise<PreparedLaunch>
	readonly assertRouted: (address: string) => Promise<void>
	readonly onChange: () => void
	/** Start in the `ErrImagePull` fault (set before the pod was first seen). */
	readonly imagePullError?: boolean
}

/** Readiness probing: fast until first ready, then a steady period; two misses make it unready. */
export const PROBE_PERIOD_UNREADY_MS = 100
export const PROBE_PERIOD_READY_MS = 500
export const PROBE_TIMEOUT_MS = 1_000
export const PROBE_FAILURE_THRESHOLD = 2
/** Retry of a container that could not be prepared (missing claim, config error). */
export const PREPARE_RETRY_MS = 500
/** Kubernetes grants a preStop hook that overran the grace period this much extra. */
export const PRESTOP_EXTENSION_MS = 2_000

export class ContainerRunner {
	readonly name: string
	#phase: ContainerPhase = { kind: 'waiting', reason: 'ContainerCreating' }
	#restartCount = 0
	#lastTerminated: ContainerStateTerminated | undefined
	#ready = false
	#process: ContainerProcess | undefined
	#imagePullError = false
	#stopping = false
	#finished = false
	#wake: () => void = () => undefined
	readonly #deps: ContainerRunnerDeps
	readonly #loop: Promise<void>
	#terminating: Promise<void> | undefined

	constructor(deps: ContainerRunnerDeps) {
		this.#deps = deps
		this.name = deps.container.name
		this.#imagePullError = deps.imagePullError ?? false
		this.#loop = this.#run()
	}

	snapshot(): ContainerSnapshot {
		return {
			name: this.name,
			image: this.#deps.container.image ?? 'namzu-agent',
			phase: this.#phase,
			...(this.#lastTerminated ? { lastTerminated: this.#lastTerminated } : {}),
			ready: this.#ready,
			restartCount: this.#restartCount,
		}
	}

	/** Stopped for good: will not run again. */
	get finished(): boolean {
		return this.#finished
	}

	get process(): ContainerProcess | undefined {
		return this.#process?.exitStatus === undefined ? this.#process : undefined
	}

	#set(phase: ContainerPhase): void {
		this.#phase = phase
		this.#deps.onChange()
	}

	#sleep(ms: number): Promise<void> {
		return new Promise((resolve) => {
			const timer = setTimeout(done, ms)
			function done() {
				clearTimeout(timer)
				resolve()
			}
			this.#wake = done
		})
	}

	async #run(): Promise<void> {
		while (!this.#stopping) {
			if (this.#imagePullError) {
				this.#set({
					kind: 'waiting',
					reason: 'ErrImagePull',
					message: `failed to pull image "${this.#deps.container.image ?? ''}": injected by the test`,
				})
				await this.#sleep(60_000)
				continue
			}
			const prepared = await this.#deps.prepare()
			if (this.#stopping) break
			if (!prepared.ok) {
				this.#set({ kind: 'waiting', reason: prepared.reason, message: prepared.message })
				await this.#sleep(PREPARE_RETRY_MS)
				continue
			}
			if (this.#lastTerminated !== undefined) this.#restartCount++
			const process = new ContainerProcess(prepared.launch)
			this.#process = process
			this.#set({ kind: 'running', startedAt: process.startedAt, containerID: process.containerID })
			const probing = this.#probe(process, prepared.probePort)
			const exit = await process.exited
			await probing
			this.#ready = false
			const terminated: ContainerStateTerminated = {
				exitCode: exit.exitCode,
				reason: terminationReason(exit.exitCode),
				startedAt: process.startedAt,
				finishedAt: exit.finishedAt,
				containerID: process.containerID,
			}
			const policy = this.#deps.pod().spec.restartPolicy
			if (this.#stopping || !shouldRestart(policy, exit.exitCode)) {
				this.#finished = true
				this.#set({ kind: 'terminated', ...terminated })
				return
			}
			this.#lastTerminated = terminated
			if (this.#imagePullError) continue
			const backoffMs = restartBackoffMs(this.#restartCount)
			this.#set({
				kind: 'waiting',
				reason: 'CrashLoopBackOff',
				message: `back-off ${backoffMs}ms restarting failed container=${this.name} pod=${this.#deps.pod().metadata.name ?? ''}`,
			})
			await this.#sleep(backoffMs)
		}
		this.#finished = true
		this.#deps.onChange()
	}

	async #probe(process: ContainerProcess, port: number | undefined): Promise<void> {
		if (port === undefined) return
		let misses = 0
		while (process.exitStatus === undefined && !this.#stopping) {
			let ready = false
			try {
				const result = await probeAgent(
					{ address: this.#deps.address, port, assertRouted: this.#deps.assertRouted },
					PROBE_TIMEOUT_MS,
				)
				ready = result.ready
			} catch {
				// The route check refused the dial: never ready.
				ready = false
			}
			if (process.exitStatus !== undefined || this.#stopping) break
			misses = ready ? 0 : misses + 1
			const next = ready || (this.#ready && misses < PROBE_FAILURE_THRESHOLD)
			if (next !== this.#ready) {
				this.#ready = next
				this.#deps.onChange()
			}
			await Promise.race([
				process.exited,
				new Promise((resolve) =>
					setTimeout(resolve, this.#ready ? PROBE_PERIOD_READY_MS : PROBE_PERIOD_UNREADY_MS),
				),
			])
		}
	}

	/** Fault: the image cannot be pulled; a running process is killed and not restarted. */
	async failImagePull(): Promise<void> {
		this.#imagePullError = true
		this.#wake()
		await this.#process?.kill()
	}

	/**
	 * Graceful stop by `deadline` (epoch ms): preStop hook, SIGTERM to pid 1, wait, SIGKILL.
	 * Resolves once the container will never run again. Idempotent.
	 */
	terminate(deadline: number): Promise<void> {
		this.#terminating ??= this.#terminate(deadline)
		return this.#terminating
	}

	async #terminate(deadline: number): Promise<void> {
		this.#stopping = true
		this.#wake()
		const process = this.process
		if (process !== undefined) {
			let killAt = deadline
			const preStop = this.#deps.container.lifecycle?.preStop?.exec?.command
			if (preStop !== undefined && preStop.length > 0) {
				await process.exec(preStop, Math.max(0, deadline - Date.now()))
				if (Date.now() >= deadline) killAt = Date.now() + PRESTOP_EXTENSION_MS
			}
			await process.signal('SIGTERM')
			const remaining = Math.max(0, killAt - Date.now())
			let timer: NodeJS.Timeout | undefined
			const expired = await Promise.race([
				process.exited.then(() => false),
				new Promise<boolean>((resolve) => {
					timer = setTimeout(() => resolve(true), remaining)
				}),
			])
			clearTimeout(timer)
			if (expired) await process.kill()
		}
		await this.#loop
	}

	/** Immediate stop (kubelet shutdown, force deletion). */
	async kill(): Promise<void> {
		this.#stopping = true
		this.#wake()
		await this.#process?.kill()
		await this.#loop
	}
}
