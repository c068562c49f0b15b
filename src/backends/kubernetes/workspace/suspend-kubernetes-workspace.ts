/**
 * `suspendKubernetesWorkspace(config, workspaceId, { signal, epoch })`: the suspend patch of
 * `namzu-ws-<workspaceId>` without opening the workspace, resolving only once the pod it retired
 * is gone or terminal (`KubernetesWorkspaceSuspendTimeoutError` when it outlives
 * `readyTimeoutMs`). It reads the object and its pod, never dials the agent, so it can neither
 * flush nor quiesce: asking for either is refused. A workspace already `Suspended` gets no patch
 * (its mode is not changing); the wait still runs. With `epoch` the write is fenced.
 */
import { callSite } from '../../../contract/argument-validators.js'
import type { FleetDependencies } from '../fleet-verbs.js'
import type { KubernetesBackendConfig } from '../kubernetes-backend-config.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import { admitFence, isGone, writeHolderEpoch, writeOperatingMode } from './fenced-write.js'
import { openWorkspaceFleetCall } from './workspace-fleet-call.js'
import { operatingModeOf } from './workspace-mode-patch.js'
import type { KubernetesWorkspaceSuspendOptions } from './workspace-options.js'
import { waitForPodStopped } from './workspace-pod-wait.js'

const METHOD = 'suspendKubernetesWorkspace'

/** Test seams: the API port and the clocks. */
export interface SuspendWorkspaceDependencies extends FleetDependencies {
	readonly now?: () => number
	readonly wallClock?: () => number
}

/** Suspends the workspace `workspaceId` and waits for its pod to stop. */
export async function suspendKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options?: KubernetesWorkspaceSuspendOptions,
): Promise<void>
/** @internal Tests replace the API client and the clocks. */
export async function suspendKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options: KubernetesWorkspaceSuspendOptions,
	dependencies: SuspendWorkspaceDependencies,
): Promise<void>
export async function suspendKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options: KubernetesWorkspaceSuspendOptions = {},
	dependencies: SuspendWorkspaceDependencies = {},
): Promise<void> {
	const call = openWorkspaceFleetCall(METHOD, 'suspend', {
		config,
		workspaceId,
		options,
		keys: ['signal', 'epoch', 'flush', 'quiesce'],
		dependencies,
	})
	for (const key of ['flush', 'quiesce']) {
		const value = call.given[key]
		if (value !== undefined && value !== false) {
			throw callSite(METHOD).refuse(
				`options.${key}`,
				`absent or false (${METHOD} never dials the agent; suspend() on a handle does a ${key})`,
				typeof value === 'object' ? JSON.stringify(value) : String(value),
			)
		}
	}
	const { target, fence, resolved } = call
	const { api, namespace: ns, sandboxName } = target
	const callOptions = target.signal ? { signal: target.signal } : {}
	const read = await api.get(kubernetesPaths.sandbox(ns, sandboxName), callOptions)
	if (fence) admitFence(target, fence, read)
	// The pod this suspend retires: a replacement another process wakes is not waited for.
	const pod = await api.get(kubernetesPaths.pod(ns, sandboxName), callOptions).catch((error) => {
		if (isGone(error)) return undefined
		throw error
	})
	if (operatingModeOf(read) === 'Suspended') {
		if (fence) await writeHolderEpoch(target, fence, read)
	} else {
		const wallClock = dependencies.wallClock ?? (() => Date.now())
		await writeOperatingMode(target, 'Suspended', wallClock(), fence, read)
	}
	if (pod === undefined) return
	await waitForPodStopped(
		{ api, config: resolved, now: dependencies.now ?? (() => performance.now()) },
		sandboxName,
		sandboxName,
		pod.metadata.uid,
		target.signal,
	)
}
