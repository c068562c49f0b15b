/**
 * The privilege probe of a freshly started instance, run through a throwaway Sandbox over the
 * instance's own transport: every tier on this machine proves its agent deprivileged the same way.
 */
import type { SandboxEnvironment } from '../../../contract/sandbox.js'
import {
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	probeSandboxPrivileges,
} from '../../../exec-programs/privilege-probe.js'
import { createAgentSandbox } from '../../../host/sandbox/agent-sandbox.js'
import type { AgentTransport } from '../../../host/transport/agent-transport.js'

/** What the probe reads of an instance. */
export interface ProbedInstance {
	readonly id: string
	readonly transport: AgentTransport
	readonly rootDir: string
	readonly environment: SandboxEnvironment
}

export async function probeInstancePrivileges(
	instance: ProbedInstance,
	readyTimeoutMs: number,
	signal: AbortSignal | undefined,
): Promise<void> {
	const probe = createAgentSandbox({
		id: instance.id,
		transport: instance.transport,
		rootDir: instance.rootDir,
		environment: instance.environment,
		release: async () => undefined,
	})
	try {
		await probeSandboxPrivileges(probe, signal, {
			timeoutMs: Math.min(readyTimeoutMs, PRIVILEGE_PROBE_MAX_TIMEOUT_MS),
		})
	} finally {
		await probe.destroy().catch(() => undefined)
	}
}
