/**
 * The Kubernetes workspace's guest names at the package root, checked by the compiler: the
 * session and reattachable-execution names are the shared classes and types themselves, the guest
 * errors are SandboxErrors (the gone-guest one still a RemoteCancellationUnknownError), and the
 * notice, identity and restart-event types have the shape the spec names.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as contract from '../../src/contract-entry.js'
import type * as root from '../../src/index.js'
import type * as kubernetes from '../../src/kubernetes-entry.js'

type Instance<T> = T extends abstract new (...args: never[]) => infer I ? I : never

describe('package root: the Kubernetes session and reattach names', () => {
	it('R15-b3db254-29: the session names are the shared classes and types', () => {
		expectTypeOf<typeof root.KubernetesSessionsUnsupportedError>().toEqualTypeOf<
			typeof contract.SessionsUnsupportedError
		>()
		expectTypeOf<typeof root.KubernetesSessionRefusedError>().toEqualTypeOf<
			typeof contract.SessionRefusedError
		>()
		expectTypeOf<typeof root.SESSIONS_FEATURE>().toEqualTypeOf<'sessions'>()
		expectTypeOf<Instance<typeof root.AgentSessionDetachedError>>().toExtend<root.SandboxError>()
		expectTypeOf<root.KubernetesOpenTerminalOptions>().toEqualTypeOf<contract.PersistentTerminalOptions>()
		expectTypeOf<root.KubernetesAttachTerminalOptions>().toEqualTypeOf<contract.AttachTerminalOptions>()
		expectTypeOf<root.KubernetesStartDetachedOptions>().toEqualTypeOf<contract.StartDetachedOptions>()
		expectTypeOf<root.KubernetesReadSessionOptions>().toEqualTypeOf<contract.ReadSessionOptions>()
		expectTypeOf<root.KubernetesKillSessionOptions>().toEqualTypeOf<contract.KillSessionOptions>()
		expectTypeOf<root.KubernetesSessionSummary>().toEqualTypeOf<contract.SessionSummary>()
		expectTypeOf<root.KubernetesSessionOutput>().toEqualTypeOf<root.BackgroundJobOutput>()
		expectTypeOf<root.KubernetesWorkspaceTerminal>().toEqualTypeOf<contract.SessionTerminal>()
		expectTypeOf<root.KubernetesSessionTerminal>().toEqualTypeOf<contract.SessionTerminal>()
		expectTypeOf<'session_capacity'>().toExtend<root.KubernetesSessionRefusal>()
	})

	it('R15-260547f-25: the reattachable-execution names are the shared classes and types', () => {
		expectTypeOf<typeof root.KubernetesExecutionDetachedError>().toEqualTypeOf<
			typeof contract.ExecutionDetachedError
		>()
		expectTypeOf<typeof root.KubernetesExecutionNotAttachableError>().toEqualTypeOf<
			typeof contract.ExecutionNotAttachableError
		>()
		expectTypeOf<typeof root.KubernetesExecutionAttachUnsupportedError>().toEqualTypeOf<
			typeof contract.ExecutionAttachUnsupportedError
		>()
		expectTypeOf<root.KubernetesDetachedExecOptions>().toEqualTypeOf<contract.DetachableExecOptions>()
		expectTypeOf<root.KubernetesAttachExecutionOptions>().toEqualTypeOf<contract.AttachExecutionOptions>()
		expectTypeOf<root.KubernetesAttachRefusal>().toEqualTypeOf<contract.AttachRefusal>()
	})
})

describe('package root: the Kubernetes guest', () => {
	it('R15-f6bfb7d-16 / R15-1d46ef4-25: the guest errors are SandboxErrors; the gone guest is still an unknown cancellation', () => {
		expectTypeOf<Instance<typeof root.KubernetesAgentRetiringError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			root.KubernetesAgentRetiringError['tier']
		>().toEqualTypeOf<kubernetes.KubernetesHandleTier>()
		expectTypeOf<kubernetes.KubernetesHandleTier>().toEqualTypeOf<'task' | 'workspace'>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceReplacedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceGuestGoneError>
		>().toExtend<root.RemoteCancellationUnknownError>()
		expectTypeOf<root.KubernetesWorkspaceGuestGoneError['retirement']>().toEqualTypeOf<
			root.SandboxRetirementObservation | undefined
		>()
	})

	it('R15-f6bfb7d-12/15/22 / R15-1d46ef4-15: the retirement reason, the agent state and the notice', () => {
		expectTypeOf<root.SandboxRetirementObservation['reason']>().toEqualTypeOf<string | undefined>()
		expectTypeOf<root.KubernetesWorkspaceAgentState>().toEqualTypeOf<
			'ok' | 'retiring' | 'unreachable'
		>()
		expectTypeOf<
			root.KubernetesWorkspaceCancellationNotice['error']
		>().toEqualTypeOf<root.RemoteCancellationUnknownError>()
		expectTypeOf<
			root.KubernetesWorkspaceCancellationNotice['agent']
		>().toEqualTypeOf<root.KubernetesWorkspaceAgentState>()
		expectTypeOf<
			root.KubernetesWorkspaceCancellationNotice['guest']
		>().toEqualTypeOf<kubernetes.KubernetesWorkspaceGuestVerdict>()
		expectTypeOf<root.KubernetesWorkspaceCancellationNotice['previous']>().toEqualTypeOf<
			kubernetes.KubernetesGuestRef | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceCancellationNotice['current']>().toEqualTypeOf<
			kubernetes.KubernetesGuestRef | undefined
		>()
	})

	it('R15-1d46ef4-07/08: identity and the restart events', () => {
		expectTypeOf<kubernetes.KubernetesWorkspaceIdentity>().toEqualTypeOf<{
			readonly sandboxUid: string
			readonly volumeClaimUids: Readonly<Record<string, string>>
			readonly podUid: string
			readonly guestBootId?: string
		}>()
		expectTypeOf<kubernetes.KubernetesGuestRestartReason>().toEqualTypeOf<
			'pod-replaced' | 'container-restarted'
		>()
		expectTypeOf<kubernetes.KubernetesGuestRestartListener>().toEqualTypeOf<
			(event: kubernetes.KubernetesGuestRestartEvent) => void
		>()
	})
})
