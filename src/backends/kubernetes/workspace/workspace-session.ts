/**
 * One workspace session: the binding to ONE pod (the Sandbox's uid, the pod's name and uid — the
 * agent's bind token — and the address per `agentAddress`) with the transport and the shared
 * `AgentSandbox` built over it. A resume (or any rebind) builds a new session from a new binding;
 * a session is never patched in place. `openWorkspaceSession` is the one function that builds it.
 */
import type { RemoteExecutionControllerOptions } from '../../../host/exec/remote-execution-controller.js'
import { type AgentSandbox, createAgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import type { AgentTransportOptions } from '../../../host/transport/agent-transport-options.js'
import { isPermanentDialFailure } from '../guest-call-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from '../kubernetes-backend-config.js'
import { KubernetesAgentRetiringError } from '../kubernetes-sandbox-errors.js'
import { DialTracker, PodRebinder } from '../pod-rebind.js'
import { podAddress } from '../readiness.js'
import { KubernetesAgentTransport } from '../transport.js'

/** The `retirement.reason` of an unconfirmed cancellation on a workspace: nothing was retired. */
export const WORKSPACE_KEPT = 'workspace-kept'

/** Which pod a session talks to, as read from the cluster. */
export interface WorkspaceBinding {
	/** The Sandbox's name (`namzu-ws-<id>`), also the pod's. */
	readonly sandboxName: string
	/** The Sandbox's `metadata.uid`: a different one is a different object with another disk. */
	readonly sandboxUid: string
	readonly podName: string
	/** The pod's `metadata.uid`: the agent's bind token. */
	readonly podUid: string
	/** Service FQDN or pod IP, per `agentAddress`. */
	readonly host: string
}

export interface WorkspaceSession extends WorkspaceBinding {
	/** The bind token every request carries (the pod uid). */
	readonly token: string
	readonly transport: KubernetesAgentTransport
	/** The shared agent-backed Sandbox every data-plane verb is served by. */
	readonly inner: AgentSandbox
	/** `agentAddress: 'pod-ip'`: what follows a replaced pod after a call that never got a socket. */
	readonly podRebind?: SessionPodRebind
}

/** The dial tracking and the one pod re-read of a `pod-ip` session (pod-rebind.ts). */
export interface SessionPodRebind {
	readonly dials: DialTracker
	/** Re-reads the pod once; resolves the replacement to bind, or undefined when there is none. */
	replacement(): Promise<{ readonly uid: string; readonly host: string } | undefined>
}

export interface WorkspaceSessionContext {
	readonly config: ResolvedKubernetesBackendConfig
	/** The guest's workspace root. */
	readonly rootDir: string
	readonly defaultTimeoutMs?: number
	/** The API a `pod-ip` session re-reads its pod through; absent, a replaced pod is not followed. */
	readonly api?: KubernetesApiPort
	/** Test seams: shorter transport and execution windows. */
	readonly transportOptions?: AgentTransportOptions
	readonly execution?: Omit<RemoteExecutionControllerOptions, 'defaultTimeoutMs'>
}

/** Builds the transport and the `AgentSandbox` of one binding. */
export function openWorkspaceSession(
	binding: WorkspaceBinding,
	context: WorkspaceSessionContext,
): WorkspaceSession {
	const { config, api } = context
	const onDialAttempt = config.onDialAttempt
	const podIp = config.agentAddress === 'pod-ip' && api !== undefined
	const dials = new DialTracker()
	let rebinder: PodRebinder | undefined
	let moved: { readonly uid: string; readonly host: string } | undefined
	const transport = new KubernetesAgentTransport(
		{ kind: 'tcp', host: binding.host, port: config.agentPort, token: binding.podUid },
		{
			streamHeartbeatMs: config.streamHeartbeatMs,
			...(config.agentAddress === 'service'
				? { permanentDialFailure: isPermanentDialFailure }
				: { permanentDialFailure: () => rebinder?.permanentDialFailure() ?? false }),
			onDialAttempt: () => {
				dials.onAttempt()
				onDialAttempt?.({ host: binding.host, port: config.agentPort })
			},
			onDial: () => {
				dials.onSocket()
				rebinder?.dialSucceeded()
			},
			...(config.onExecTiming ? { onTiming: config.onExecTiming } : {}),
			...context.transportOptions,
		},
	)
	const inner = createAgentSandbox({
		id: binding.sandboxName,
		transport,
		rootDir: context.rootDir,
		environment: 'linux-namespace',
		...(context.defaultTimeoutMs === undefined
			? {}
			: { defaultTimeoutMs: context.defaultTimeoutMs }),
		execution: { ...transport.executionOptions, ...context.execution },
		// The pod is the workspace's and outlives this session: a session's end stops nothing.
		release: async () => {},
		// An unconfirmed cancellation never retires a workspace: nothing is patched or deleted, and
		// the handle keeps admitting calls (the handle diagnoses the guest instead).
		keepOnUnconfirmedCancellation: { reason: WORKSPACE_KEPT },
		// A guest that fenced itself is named; its refused reservation ran nothing.
		fencedGuest: (error, operation) =>
			new KubernetesAgentRetiringError(binding.sandboxName, operation, 'workspace', {
				cause: error,
			}),
	})
	if (podIp) {
		// The follow builds a new session (the handle's), so this one only records the move.
		rebinder = new PodRebinder({
			api,
			namespace: config.namespace,
			podName: binding.podName,
			port: config.agentPort,
			token: binding.podUid,
			transport,
			addressOf: podAddress,
			follow: (move) => {
				moved = move
			},
		})
	}
	const follower = rebinder
	const podRebind: SessionPodRebind | undefined = follower && {
		dials,
		replacement: async () => {
			moved = undefined
			return (await follower.rebind()) ? moved : undefined
		},
	}
	return {
		...binding,
		token: binding.podUid,
		transport,
		inner,
		...(podRebind ? { podRebind } : {}),
	}
}
