/**
 * What the two workspace verbs that write (`suspendKubernetesWorkspace`,
 * `deleteKubernetesWorkspace`) check before their first request, in one place: the id (refused by
 * name, never sanitised), the options object and its keys, the signal, the epoch; then the resolved
 * config, the API port and the fenced target those verbs write through.
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
	type ResolvedKubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../kubernetes-backend-config.js'
import type { Fence, FencedTarget } from './fenced-write.js'
import { workspaceSandboxName } from './workspace-name.js'
import { optionalEpoch } from './workspace-options.js'

export interface WorkspaceFleetCall {
	readonly resolved: ResolvedKubernetesBackendConfig
	readonly target: FencedTarget
	readonly fence: Fence | undefined
	/** The options as given, for the keys the verb checks itself. */
	readonly given: Readonly<Record<string, unknown>>
}

export function openWorkspaceFleetCall(
	method: string,
	operation: Fence['operation'],
	input: {
		readonly config: KubernetesBackendConfig
		readonly workspaceId: string
		readonly options: unknown
		readonly keys: readonly string[]
		readonly dependencies: FleetDependencies
	},
): WorkspaceFleetCall {
	const site = callSite(method)
	const { workspaceId } = input
	const sandboxName = workspaceSandboxName(workspaceId, { method, parameter: 'workspaceId' })
	const given = requireObject(site, 'options', input.options)
	refuseUnknownKeys(site, 'options', given, [...input.keys])
	const signal = optionalSignal(site, 'options.signal', given.signal)
	const epoch = optionalEpoch(method, given.epoch)
	const resolved = resolveKubernetesBackendConfig(input.config)
	signal?.throwIfAborted()
	return {
		resolved,
		target: {
			api: connect(resolved, input.dependencies),
			namespace: resolved.namespace,
			sandboxName,
			...(signal ? { signal } : {}),
		},
		fence: epoch === undefined ? undefined : { epoch, operation, workspaceId },
		given,
	}
}
