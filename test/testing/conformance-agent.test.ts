import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { AgentSandbox, createAgentSandbox } from '../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../src/host/transport/agent-transport.js'
import { defineSandboxConformance, type MakeSandbox } from '../../src/testing/index.js'
import { startAgent } from '../helpers/agent-process.js'
import { makeThrowawayCgroups, v1WorkloadCgroupsSkipReason } from '../helpers/throwaway-cgroups.js'

/**
 * The contract suite against the host's agent-backed Sandbox over a plain (unsandboxed) agent
 * process: once on a unix socket, once over token-authenticated TCP, where a 9 MiB body exceeds
 * the 8 MiB pre-auth frame and must travel in parts, and once on a unix socket with per-command
 * cgroups (throwaway v1 freezer + pids groups), where an abort must end the whole tree.
 */
function agentSandboxFactory(mode: 'unix' | 'tcp', grouped = false): MakeSandbox {
	return async () => {
		const token = randomUUID()
		const groups = grouped ? makeThrowawayCgroups() : undefined
		const agent = await startAgent({
			mode,
			env: {
				NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '2000',
				...(mode === 'tcp' ? { NAMZU_AGENT_BIND_TOKEN: token } : {}),
				...(groups?.env ?? {}),
			},
			...(groups ? { extraStdio: groups.extraStdio } : {}),
		}).finally(() => groups?.closeFds())
		const stop = async () => {
			await agent.stop()
			await groups?.remove()
		}
		const handle =
			mode === 'unix'
				? { kind: 'unix' as const, path: agent.socketPath ?? '' }
				: { kind: 'tcp' as const, host: '127.0.0.1', port: agent.port ?? 0, token }
		const sandbox = createAgentSandbox({
			id: `conformance-${mode}-${randomUUID().slice(0, 8)}`,
			transport: new AgentTransport(handle),
			rootDir: agent.workspace,
			environment: 'basic',
			release: stop,
		})
		return { sandbox, dispose: stop }
	}
}

const shared = { supportsRangedAndStreamedReads: true, sandboxShape: AgentSandbox.prototype }
const groupless = {
	killsDetachedDescendants: {
		supported: false,
		reason: 'an agent given no workload cgroups kills the process group, which a setsid child left',
	},
} as const

defineSandboxConformance({ describe, it, expect }, agentSandboxFactory('unix'), {
	...shared,
	label: 'agent sandbox over a unix socket',
	capabilities: groupless,
})

defineSandboxConformance({ describe, it, expect }, agentSandboxFactory('tcp'), {
	...shared,
	label: 'agent sandbox over token-authenticated tcp',
	capabilities: groupless,
})

const cgroupsSkip = v1WorkloadCgroupsSkipReason()
if (cgroupsSkip) console.warn(`the per-command cgroup conformance run is skipped: ${cgroupsSkip}`)
describe.skipIf(cgroupsSkip !== undefined)('with per-command cgroups', () => {
	defineSandboxConformance({ describe, it, expect }, agentSandboxFactory('unix', true), {
		...shared,
		label: 'agent sandbox over a unix socket with per-command cgroups',
	})
})
