import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AgentSandbox, createAgentSandbox } from '../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../src/host/transport/agent-transport.js'
import { defineSandboxConformance, type MakeSandbox } from '../../src/testing/index.js'
import { startAgent } from '../helpers/agent-process.js'

/**
 * The contract suite against the host's agent-backed Sandbox over a plain (unsandboxed) agent
 * process: once on a unix socket, once over token-authenticated TCP, where a 9 MiB body exceeds
 * the 8 MiB pre-auth frame and must travel in parts.
 */
function agentSandboxFactory(mode: 'unix' | 'tcp'): MakeSandbox {
	return async () => {
		const token = randomUUID()
		const agent = await startAgent({
			mode,
			env: {
				NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '2000',
				...(mode === 'tcp' ? { NAMZU_AGENT_BIND_TOKEN: token } : {}),
			},
		})
		const handle =
			mode === 'unix'
				? { kind: 'unix' as const, path: agent.socketPath ?? '' }
				: { kind: 'tcp' as const, host: '127.0.0.1', port: agent.port ?? 0, token }
		const sandbox = createAgentSandbox({
			id: `conformance-${mode}-${randomUUID().slice(0, 8)}`,
			transport: new AgentTransport(handle),
			rootDir: agent.workspace,
			environment: 'basic',
			release: () => agent.stop(),
		})
		return { sandbox, dispose: () => agent.stop() }
	}
}

const shared = { supportsRangedAndStreamedReads: true, sandboxShape: AgentSandbox.prototype }

defineSandboxConformance({ describe, it, expect }, agentSandboxFactory('unix'), {
	...shared,
	label: 'agent sandbox over a unix socket',
})

defineSandboxConformance({ describe, it, expect }, agentSandboxFactory('tcp'), {
	...shared,
	label: 'agent sandbox over token-authenticated tcp',
})
