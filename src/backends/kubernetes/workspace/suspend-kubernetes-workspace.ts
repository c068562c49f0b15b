/**
 * `suspendKubernetesWorkspace(config, workspaceId, { signal, epoch })`: the suspend patch of
 * `namzu-ws-<workspaceId>` without opening the workspace, resolving only once the pod it retired
 * is gone or terminal (`KubernetesWorkspaceSuspendTimeoutError` when it outlives
 * `readyTimeoutMs`). It reads the object and its pod, never dials the agent, so it can neither
 * flush nor quiesce: asking for either is refused. A workspace already `Suspended` gets no patch
 * (its mode is not changing); the wait still runs. With `epoch` the write is fenced.
 */
import {
	callSite,
	optionalSignal,
	refuseUnknownKeys,
	requireObject,
} from '../../../contract/argument-validators.js'
import { connect, type FleetDependencies } from '../fleet-verbs.js'
import {
	type KubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../kubernetes-backend-config.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import {
	admitFence,
	type Fence,
	type FencedTarget,
	isGone,
	writeHolderEpoch,
	writeOperatingMode,
} from './fenced-write.js'
import { operatingModeOf } from './workspace-mode-patch.js'
import { workspaceSandboxName } from './workspace-name.js'
import { type KubernetesWorkspaceSuspendOptions, optionalEpoch } from './workspace-options.js'
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
	const site = callSite(METHOD)
	const sandboxName = workspaceSandboxName(workspaceId, {
		method: METHOD,
		parameter: 'workspaceId',
	})
	const given = requireObject(site, 'options', options)
	refuseUnknownKeys(site, 'options', given, ['signal', 'epoch', 'flush', 'quiesce'])
	for (const key of ['flush', 'quiesce']) {
		const value = given[key]
		if (value !== undefined && value !== false) {
			throw site.refuse(
				`options.${key}`,
				`absent or false (${METHOD} never dials the agent; suspend() on a handle does a ${key})`,
				typeof value === 'object' ? JSON.stringify(value) : String(value),
			)
		}
	}
	const signal = optionalSignal(site, 'options.signal', given.signal)
	const epoch = optionalEpoch(METHOD, given.epoch)
	const resolved = resolveKubernetesBackendConfig(config)
	signal?.throwIfAborted()
	const api = connect(resolved, dependencies)
	const ns = resolved.namespace
	const callOptions = signal ? { signal } : {}
	const target: FencedTarget = { api, namespace: ns, sandboxName, ...callOptions }
	const fence: Fence | undefined =
		epoch === undefined ? undefined : { epoch, operation: 'suspend', workspaceId }
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
		signal,
	)
}
