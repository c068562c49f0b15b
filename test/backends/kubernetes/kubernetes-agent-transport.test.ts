// KubernetesAgentTransport: the package-internal transport the Kubernetes backend reaches a pod's
// agent through, and its `onTiming` — against the REAL agent bundle over token TCP, both directly
// (the transport under the shared AgentSandbox) and through the backend's own wiring
// (`KubernetesBackendConfig.onExecTiming`, a scripted API port and a deprivileged guest).
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { RemoteExecutionTiming } from '../../../src/agent-entry.js'
import * as kubernetesBarrel from '../../../src/backends/kubernetes/index.js'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesAgentTransport } from '../../../src/backends/kubernetes/transport.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import * as root from '../../../src/index.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { podIpGuestConfig } from './local-guest-config.js'
import { pod, warmClaimApi } from './scripted-api-port.js'

const TOKEN = `bind-${randomUUID()}`
const TIMING_FIELDS = ['dialMs', 'drainMs', 'executeMs', 'reserveMs']
const src = join(import.meta.dirname, '..', '..', '..', 'src')

let agent: StartedAgent
const guests: GuestAgent[] = []

beforeAll(async () => {
	agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN } })
})

afterAll(async () => {
	await agent?.stop()
})

afterEach(async () => {
	await Promise.all(guests.splice(0).map((guest) => guest.stop()))
})

/** The transport under the shared AgentSandbox, wired the way the backend wires it. */
function sandboxOver(timings: RemoteExecutionTiming[]) {
	const transport = new KubernetesAgentTransport(
		{ kind: 'tcp', host: '127.0.0.1', port: agent.port ?? 0, token: TOKEN },
		{ onTiming: (timing) => timings.push(timing) },
	)
	const sandbox = createAgentSandbox({
		id: 'timing',
		transport,
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async () => {},
		execution: transport.executionOptions,
	})
	return { transport, sandbox }
}

function expectDurations(timing: RemoteExecutionTiming | undefined): void {
	expect(Object.keys(timing ?? {}).sort()).toEqual(TIMING_FIELDS)
	for (const field of TIMING_FIELDS) {
		const value = (timing as unknown as Record<string, unknown>)[field]
		expect(typeof value).toBe('number')
		expect(Number.isFinite(value)).toBe(true)
		expect(value as number).toBeGreaterThanOrEqual(0)
	}
}

describe('KubernetesAgentTransport', () => {
	it('lives in src/backends/kubernetes/transport.ts and is exported from neither the package root nor the Kubernetes barrel', async () => {
		expect(new KubernetesAgentTransport({ kind: 'tcp', host: 'h', port: 1 })).toBeInstanceOf(
			AgentTransport,
		)
		expect(Object.keys(root)).not.toContain('KubernetesAgentTransport')
		expect(Object.keys(kubernetesBarrel)).not.toContain('KubernetesAgentTransport')
		const barrel = await readFile(join(src, 'backends', 'kubernetes', 'index.ts'), 'utf8')
		expect(barrel).not.toContain('./transport.js')
	})

	it('reports the dial, reserve, execute and drain durations of a completed exec to onTiming', async () => {
		const timings: RemoteExecutionTiming[] = []
		const { sandbox } = sandboxOver(timings)
		const result = await sandbox.exec('sh', ['-c', 'echo out'])
		expect(result).toMatchObject({ exitCode: 0, stdout: 'out\n' })
		expect(timings).toHaveLength(1)
		const [timing] = timings
		expectDurations(timing)
		// Two real round trips over fresh connections happened: each took measurable time.
		expect(timing?.dialMs).toBeGreaterThan(0)
		expect(timing?.reserveMs).toBeGreaterThan(0)
		expect(timing?.executeMs).toBeGreaterThan(0)
		await sandbox.destroy()
	})

	it('never puts the token, the command or any output in the onTiming payload', async () => {
		const timings: RemoteExecutionTiming[] = []
		const { sandbox } = sandboxOver(timings)
		const marker = `marker${randomUUID().slice(0, 8)}`
		const result = await sandbox.exec('sh', ['-c', `echo out-${marker}; echo err-${marker} >&2`])
		expect(result.stdout).toContain(marker)
		expect(result.stderr).toContain(marker)
		expect(timings).toHaveLength(1)
		expect(Object.keys(timings[0] ?? {}).sort()).toEqual(TIMING_FIELDS)
		const payload = JSON.stringify(timings)
		for (const secret of [TOKEN, marker, 'echo', 'sh']) expect(payload).not.toContain(secret)
		await sandbox.destroy()
	})

	it('keeps the exec result when onTiming throws, and says nothing when none is given', async () => {
		const transport = new KubernetesAgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port: agent.port ?? 0, token: TOKEN },
			{
				onTiming: () => {
					throw new Error('listener bug')
				},
			},
		)
		const sandbox = createAgentSandbox({
			id: 'throwing-timing',
			transport,
			rootDir: agent.workspace,
			environment: 'linux-namespace',
			release: async () => {},
			execution: transport.executionOptions,
		})
		await expect(sandbox.exec('true')).resolves.toMatchObject({ exitCode: 0 })
		const silent = new KubernetesAgentTransport({ kind: 'tcp', host: '127.0.0.1', port: 1 })
		expect(silent.executionOptions).toEqual({})
		await sandbox.destroy()
	})
})

describe('the Kubernetes backend', () => {
	it('reaches the guest through KubernetesAgentTransport and reports each exec to onExecTiming', async () => {
		const podUid = randomUUID()
		const guest = await startGuestAgent({ token: podUid })
		guests.push(guest)
		const api = warmClaimApi('pool-timing', () => pod(podUid, '127.0.0.1'))
		const timings: RemoteExecutionTiming[] = []
		const config = podIpGuestConfig(guest.port, {
			onExecTiming: (timing) => timings.push(timing),
		})
		const sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: guest.workspace,
		})
		// The acquire-time privilege probe is itself an exec over the same transport.
		const afterAcquire = timings.length
		const marker = `m${randomUUID().slice(0, 8)}`
		await expect(sandbox.exec('echo', [marker])).resolves.toMatchObject({
			stdout: `${marker}\n`,
		})
		expect(timings).toHaveLength(afterAcquire + 1)
		expectDurations(timings.at(-1))
		const payload = JSON.stringify(timings)
		for (const secret of [podUid, marker, 'echo']) expect(payload).not.toContain(secret)
		await sandbox.destroy()
	})

	it('refuses an onExecTiming that is not a function at construction', () => {
		expect(() =>
			resolveKubernetesBackendConfig({
				tier: 'microvm',
				service: 'kubernetes',
				namespace: 'ns',
				access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
				sandboxTemplateName: 'task',
				onExecTiming: 'log' as unknown as () => void,
			}),
		).toThrow(/onExecTiming/)
	})
})
