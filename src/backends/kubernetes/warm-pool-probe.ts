/**
 * The privilege probe run once in a warm pool's pod before anyone claims it (warm-pool-roster.ts
 * decides which pods). It owns nothing: it releases and retires nothing, reports no timing or dial
 * to the caller's hooks, and only a pass counts (the acquire probes every pod not proven so).
 */
import {
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	probeSandboxPrivileges,
} from '../../exec-programs/privilege-probe.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import { agentHost } from './acquire-pod.js'
import { isPermanentDialFailure } from './guest-call-errors.js'
import type { ResolvedKubernetesBackendConfig } from './kubernetes-backend-config.js'
import { KubernetesAgentTransport } from './transport.js'
import type { RosterPod } from './warm-pool-roster.js'

/** The probe's deadline, wherever it runs: the ready budget, capped. */
export function probeTimeoutMs(config: ResolvedKubernetesBackendConfig): number {
	return Math.min(config.readyTimeoutMs, PRIVILEGE_PROBE_MAX_TIMEOUT_MS)
}

/** Resolves when the pod's guest passed the probe; rejects otherwise (or when `closed` aborts). */
export async function warmUpPod(
	config: ResolvedKubernetesBackendConfig,
	rootDir: string,
	pod: RosterPod,
	closed: AbortSignal,
): Promise<void> {
	const host = agentHost(config, pod.name, pod.ip) ?? pod.ip
	const transport = new KubernetesAgentTransport(
		{ kind: 'tcp', host, port: config.agentPort, token: pod.uid },
		{
			streamHeartbeatMs: config.streamHeartbeatMs,
			permanentDialFailure: isPermanentDialFailure,
			// The caller's hook sees every dial into a guest, the roster's probes included.
			...(config.onDialAttempt
				? { onDialAttempt: () => config.onDialAttempt?.({ host, port: config.agentPort }) }
				: {}),
		},
	)
	const sandbox = createAgentSandbox({
		id: pod.name,
		transport,
		rootDir,
		environment: 'linux-namespace',
		release: async () => undefined,
	})
	try {
		await probeSandboxPrivileges(sandbox, closed, { timeoutMs: probeTimeoutMs(config) })
	} finally {
		await sandbox.destroy().catch(() => undefined)
	}
}
