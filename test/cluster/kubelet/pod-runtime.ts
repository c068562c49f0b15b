/**
 * One pod on this node, without the API server: its network namespace and address, its
 * containers (each a `ContainerRunner`), their volumes, and the `PodSnapshot` the status is built
 * from. The API-facing kubelet creates one per bound pod and feeds it the latest object; tests
 * create one straight from a pod spec object.
 */
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { blockWorkspaceTarget } from './block-claim-plan.js'
import { ensureExt4, mountDisk, unmountDisk } from './block-filesystem.js'
import type { ContainerLaunch } from './container-process.js'
import { ContainerRunner, type PreparedLaunch } from './container-runner.js'
import {
	type EnvSources,
	expandReferences,
	NO_ENV_SOURCES,
	resolveContainerEnv,
} from './downward-env.js'
import { GUEST_IMAGE_NAME, type GuestImage, namesGuestImage } from './guest-image.js'
import type { HarnessNetwork } from './harness-network.js'
import type { Container, Pod } from './kube-types.js'
import {
	agentReadOnlyPaths,
	buildContainerBwrapArgs,
	type ContainerMount,
	type DeviceBind,
	type RootEntry,
} from './pod-bwrap-argv.js'
import type { PodNetwork, PodNetworkAllocator } from './pod-network.js'
import type { PodSnapshot } from './pod-status.js'
import { planVolumes } from './pod-volumes.js'
import { resolveSecurity } from './security-context.js'

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
/** Set in every container so a test's `command` can start the agent: `node $(NAMZU_KUBELET_AGENT_BUNDLE)`. */
export const AGENT_BUNDLE_ENV = 'NAMZU_KUBELET_AGENT_BUNDLE'
export const DEFAULT_GRACE_SECONDS = 30

export interface PodRuntimeDeps {
	readonly network: HarnessNetwork
	readonly allocator: PodNetworkAllocator
	/** Per-pod scratch (emptyDir volumes), removed with the pod. */
	readonly podDir: string
	readonly agentBundlePath: string
	readonly nodePath: string
	readonly bwrapPath: string
	readonly rootEntries: readonly RootEntry[]
	/** The built guest image; a container naming it runs from it (absent: such a pod cannot start). */
	readonly guestImage?: GuestImage
	/**
	 * A claim's volume for this pod — its host directory, or its block device attached — or a
	 * reason it is not available yet. The pod holds its claims until `releaseClaims`.
	 */
	readonly claimVolume: (namespace: string, claimName: string) => Promise<ClaimVolumeResult>
	/** Called once the pod's disks are unmounted: its claims may be detached. */
	readonly releaseClaims?: () => Promise<void>
	readonly envSources?: (pod: Pod, container: Container) => Promise<EnvSources>
	readonly onChange: () => void
	/** Containers start in the `ErrImagePull` fault. */
	readonly imagePullError?: boolean
}

export type ClaimVolumeResult =
	| { readonly ok: true; readonly kind: 'directory'; readonly path: string }
	| { readonly ok: true; readonly kind: 'block'; readonly device: string }
	| { readonly ok: false; readonly message: string }

/** The agent's TCP port from the resolved env, when it is a fixed one that can be probed. */
export function agentProbePort(env: Readonly<Record<string, string>>): number | undefined {
	const raw = env.NAMZU_AGENT_TCP_PORT
	if (raw === undefined || !/^\d+$/.test(raw)) return undefined
	const port = Number(raw)
	return port > 0 && port <= 65535 ? port : undefined
}

export class PodRuntime {
	#pod: Pod
	readonly #deps: PodRuntimeDeps
	readonly startTime = new Date().toISOString()
	#net: PodNetwork | undefined
	#runners: ContainerRunner[] = []
	#terminating: Promise<void> | undefined
	#released: Promise<void> | undefined
	/** Block claims' filesystems mounted on the host for this pod, by volume name. */
	readonly #disks = new Map<string, Promise<string>>()

	private constructor(pod: Pod, deps: PodRuntimeDeps) {
		this.#pod = pod
		this.#deps = deps
	}

	/** Creates the pod's network namespace and starts its containers. */
	static async start(pod: Pod, deps: PodRuntimeDeps): Promise<PodRuntime> {
		const runtime = new PodRuntime(pod, deps)
		await mkdir(deps.podDir, { recursive: true })
		runtime.#net = await deps.allocator.create()
		const address = runtime.#net.address
		runtime.#runners = pod.spec.containers.map(
			(container) =>
				new ContainerRunner({
					pod: () => runtime.#pod,
					container,
					address,
					prepare: () => runtime.#prepare(container),
					assertRouted: (target) => deps.network.assertRouted(target),
					onChange: deps.onChange,
					...(deps.imagePullError ? { imagePullError: true } : {}),
				}),
		)
		deps.onChange()
		return runtime
	}

	get pod(): Pod {
		return this.#pod
	}

	get address(): string | undefined {
		return this.#net?.address
	}

	get netns(): string | undefined {
		return this.#net?.netns
	}

	/** The latest object from the API server (labels, deletion timestamp). Spec changes are ignored. */
	update(pod: Pod): void {
		this.#pod = { ...pod, spec: this.#pod.spec }
	}

	runner(name?: string): ContainerRunner | undefined {
		return name === undefined ? this.#runners[0] : this.#runners.find((r) => r.name === name)
	}

	get runners(): readonly ContainerRunner[] {
		return this.#runners
	}

	get terminating(): boolean {
		return this.#terminating !== undefined
	}

	snapshot(): PodSnapshot {
		return {
			...(this.#net ? { podIP: this.#net.address } : {}),
			hostIP: this.#deps.network.plan.gateway,
			startTime: this.startTime,
			sandboxReady: this.#net !== undefined && this.#released === undefined,
			containers: this.#runners.map((runner) => runner.snapshot()),
			finished: this.#runners.length > 0 && this.#runners.every((runner) => runner.finished),
		}
	}

	async #prepare(container: Container): Promise<PreparedLaunch> {
		const pod = this.#pod
		const net = this.#net
		if (net === undefined) return { ok: false, reason: 'ContainerCreating', message: 'no network' }
		const sources = (await this.#deps.envSources?.(pod, container)) ?? NO_ENV_SOURCES
		const resolved = resolveContainerEnv(
			pod,
			container,
			{ podIP: net.address, hostIP: net.gateway },
			sources,
		)
		if (!resolved.ok) return { ok: false, reason: resolved.reason, message: resolved.message }
		const resolvedIdentity = resolveSecurity(pod, container)
		if (!resolvedIdentity.ok) {
			return { ok: false, reason: resolvedIdentity.reason, message: resolvedIdentity.message }
		}
		const image = namesGuestImage(container.image) ? this.#deps.guestImage : undefined
		// Only the guest image's entrypoint, as root, is trusted with real root: it formats and
		// mounts its own disk (the shipped workspace template). Elsewhere `privileged` is ignored.
		const privileged =
			image !== undefined &&
			container.securityContext?.privileged === true &&
			resolvedIdentity.uid === 0
		const identity = privileged ? { ...resolvedIdentity, privileged: true } : resolvedIdentity
		if (namesGuestImage(container.image) && image === undefined) {
			return {
				ok: false,
				reason: 'ErrImageNeverPull',
				message: `image "${container.image ?? GUEST_IMAGE_NAME}" is not built on this node: npm run image:build`,
			}
		}
		const mounts: ContainerMount[] = []
		const devices: DeviceBind[] = []
		let workspaceDisk: { volume: string; device: string } | undefined
		const namespace = pod.metadata.namespace ?? 'default'
		for (const need of planVolumes(pod, container).needs) {
			if (need.kind === 'emptyDir') {
				const source = join(this.#deps.podDir, 'volumes', need.volume)
				await mkdir(source, { recursive: true })
				mounts.push({ source, target: need.target, readOnly: false })
				continue
			}
			const claim = await this.#deps.claimVolume(namespace, need.claimName)
			if (!claim.ok) return { ok: false, reason: 'ContainerCreating', message: claim.message }
			if (claim.kind === 'directory') {
				mounts.push({ source: claim.path, target: need.target, readOnly: need.readOnly })
				continue
			}
			if (need.use === 'mount') {
				return {
					ok: false,
					reason: 'CreateContainerConfigError',
					message: `volume "${need.volume}" has volumeMode Block and can only be used in volumeDevices`,
				}
			}
			devices.push({ source: claim.device, target: need.target })
			workspaceDisk ??= { volume: need.volume, device: claim.device }
		}
		if (workspaceDisk !== undefined && !privileged) {
			// Standing in for the image entrypoint: the first block device's filesystem is the
			// agent's workspace, at the container's NAMZU_SANDBOX_WORKSPACE. A privileged guest
			// image container gets only the device: its entrypoint formats and mounts it.
			const target = blockWorkspaceTarget(resolved.env)
			if (!target.ok) {
				return { ok: false, reason: 'CreateContainerConfigError', message: target.message }
			}
			try {
				const source = await this.#mountDisk(workspaceDisk.volume, workspaceDisk.device)
				mounts.push({ source, target: target.path, readOnly: false })
			} catch (error) {
				return {
					ok: false,
					reason: 'ContainerCreating',
					message: `cannot mount volume "${workspaceDisk.volume}": ${error instanceof Error ? error.message : String(error)}`,
				}
			}
		}
		const hostname = (pod.spec.hostname ?? pod.metadata.name ?? 'pod').slice(0, 63)
		// The host "image" has no user database entry for the pod's uid: HOME is /tmp. The guest
		// image's entrypoint resolves HOME itself, as it does under a real runtime.
		const env: Record<string, string> = {
			PATH: DEFAULT_PATH,
			...(image === undefined
				? { HOME: '/tmp', [AGENT_BUNDLE_ENV]: this.#deps.agentBundlePath }
				: {}),
			...resolved.env,
			HOSTNAME: hostname,
		}
		const defined = new Map(Object.entries(env))
		const entrypoint = container.command?.length
			? container.command.map((part) => expandReferences(part, defined))
			: image !== undefined
				? [...image.entrypoint]
				: [this.#deps.nodePath, this.#deps.agentBundlePath]
		const args = (container.args ?? []).map((part) => expandReferences(part, defined))
		const bwrapArgs = buildContainerBwrapArgs({
			rootEntries: image?.rootEntries ?? this.#deps.rootEntries,
			...(image === undefined ? {} : { imageRoot: image.rootfs }),
			readOnlyPaths:
				image === undefined
					? agentReadOnlyPaths(this.#deps.nodePath, this.#deps.agentBundlePath)
					: [],
			mounts: image === undefined ? mounts : [...image.binds, ...mounts],
			devices,
			identity,
			hostname,
			workingDir: container.workingDir ?? '/',
			command: [...entrypoint, ...args],
		})
		const launch: ContainerLaunch = {
			netns: net.netns,
			bwrapPath: this.#deps.bwrapPath,
			bwrapArgs,
			env,
			uid: identity.uid,
			gid: identity.gid,
			...(privileged ? { privileged: true } : {}),
			secrets: [env.NAMZU_AGENT_BIND_TOKEN ?? ''].filter((s) => s !== ''),
		}
		const probePort = agentProbePort(env)
		return { ok: true, launch, ...(probePort === undefined ? {} : { probePort }) }
	}

	/**
	 * Mounts a block claim's filesystem once per pod, in the pod's own directory — formatting an
	 * empty device first, never reformatting one (ensureExt4), as the entrypoint would.
	 */
	#mountDisk(volume: string, device: string): Promise<string> {
		let mounted = this.#disks.get(volume)
		if (mounted === undefined) {
			const dir = join(this.#deps.podDir, 'disks', volume)
			mounted = ensureExt4(device)
				.then(() => mountDisk(device, dir))
				.then(() => dir)
			mounted.catch(() => this.#disks.delete(volume))
			this.#disks.set(volume, mounted)
		}
		return mounted
	}

	/** Unmounts every disk of this pod; true when none is left mounted. */
	async #unmountDisks(): Promise<boolean> {
		let clean = true
		for (const mounted of this.#disks.values()) {
			const dir = await mounted.catch(() => undefined)
			if (dir !== undefined && !(await unmountDisk(dir))) clean = false
		}
		return clean
	}

	/**
	 * Graceful termination: every container gets the grace period (from the deletion, else the
	 * spec, else 30 s) for its preStop hook and SIGTERM before SIGKILL. Idempotent.
	 */
	terminate(graceSeconds?: number): Promise<void> {
		const seconds =
			graceSeconds ??
			this.#pod.metadata.deletionGracePeriodSeconds ??
			this.#pod.spec.terminationGracePeriodSeconds ??
			DEFAULT_GRACE_SECONDS
		const deadline = Date.now() + Math.max(0, seconds) * 1000
		this.#terminating ??= Promise.all(this.#runners.map((r) => r.terminate(deadline))).then(() =>
			this.#deps.onChange(),
		)
		return this.#terminating
	}

	/**
	 * Kills every container at once, unmounts the pod's disks and lets go of its claims, and
	 * removes the namespace and the pod's scratch. Idempotent.
	 */
	release(): Promise<void> {
		this.#released ??= (async () => {
			await Promise.all(this.#runners.map((runner) => runner.kill()))
			await this.#net?.release()
			const unmounted = await this.#unmountDisks()
			await this.#deps.releaseClaims?.()
			// Never recurse into a filesystem that is still mounted: that would empty the claim.
			if (unmounted) await rm(this.#deps.podDir, { recursive: true, force: true })
		})()
		return this.#released
	}
}
