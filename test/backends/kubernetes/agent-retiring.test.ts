// A guest agent that fenced itself (`agent_retiring`) is named on the Kubernetes task path: a REAL
// agent is fenced by an unconfirmable cancellation from a second handle (fenced-guest.ts), and the
// task sandbox acquired on it before meets the fence on every verb as KubernetesAgentRetiringError —
// without retiring itself and without a request to the cluster.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import type { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import {
	KubernetesAgentRetiringError,
	RemoteCancellationUnknownError,
	SandboxRetiredError,
} from '../../../src/index.js'
import { FENCE_AGENT_ENV, fenceGuest } from '../../helpers/fenced-agent.js'
import { canFreeze } from '../../helpers/frozen-process.js'
import { rejectionError } from './error-chain.js'
import { launchGuestAgent, SETPRIV_CHAIN } from './launched-guest.js'
import { podIpGuestConfig } from './local-guest-config.js'
import { pod, warmClaimApi } from './scripted-api-port.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined)
})

async function fencedTaskSandbox() {
	const token = randomUUID()
	const guest = await launchGuestAgent({ token, launcher: SETPRIV_CHAIN, env: FENCE_AGENT_ENV })
	cleanups.push(() => guest.stop())
	const api = warmClaimApi('pool-fenced', () => pod(token, '127.0.0.1'))
	const sandbox = (await createKubernetesTaskSandbox(api.port, podIpGuestConfig(guest.port), {
		rootDir: guest.workspace,
	})) as KubernetesTaskSandbox
	cleanups.unshift(() => sandbox.destroy())
	const fence = await fenceGuest(
		{ kind: 'tcp', host: '127.0.0.1', port: guest.port, token },
		guest.workspace,
	)
	cleanups.unshift(() => fence.frozen.thaw())
	return { sandbox, api, callsBefore: api.calls.length }
}

describe.skipIf(!canFreeze)('Kubernetes task sandbox against a guest that fenced itself', () => {
	it('R15-f6bfb7d-16/17/18: a reservation refused agent_retiring rejects with KubernetesAgentRetiringError naming destroy(), retires nothing and sends nothing to the cluster', async () => {
		const { sandbox, api, callsBefore } = await fencedTaskSandbox()
		const error = await rejectionError(sandbox.exec('/bin/true'))
		expect(error).toBeInstanceOf(KubernetesAgentRetiringError)
		expect(error).not.toBeInstanceOf(RemoteCancellationUnknownError)
		const retiring = error as KubernetesAgentRetiringError
		expect(retiring.reason).toBe('agent-retiring')
		expect(retiring.tier).toBe('task')
		expect(retiring.operation).toBe('exec')
		expect(retiring.message).toContain('destroy()')
		expect(retiring.message).not.toContain('resume()')
		// Not retired: the handle still admits calls (which meet the fence again) and reads ready.
		expect(sandbox.status).toBe('ready')
		expect(await rejectionError(sandbox.exec('/bin/true'))).toBeInstanceOf(
			KubernetesAgentRetiringError,
		)
		expect(api.calls.slice(callsBefore)).toEqual([])
	})

	it('R15-f6bfb7d-19: every op but healthz and cancel-execution meets the fence, each named KubernetesAgentRetiringError', async () => {
		const { sandbox, api, callsBefore } = await fencedTaskSandbox()
		const calls: Array<[string, () => Promise<unknown>]> = [
			['readFile', () => sandbox.readFile('a.txt')],
			['writeFile', () => sandbox.writeFile('a.txt', 'x')],
			['listFiles', () => sandbox.listFiles('.')],
			['openTerminal', () => sandbox.openTerminal({ size: { cols: 80, rows: 24 } })],
			['openTcpConnection', () => sandbox.openTcpConnection({ port: 9 })],
		]
		for (const [operation, call] of calls) {
			const error = await rejectionError(call())
			expect(error, operation).toBeInstanceOf(KubernetesAgentRetiringError)
			expect((error as KubernetesAgentRetiringError).operation).toBe(operation)
		}
		expect(sandbox.status).toBe('ready')
		expect(api.calls.slice(callsBefore)).toEqual([])
		// The fence is not a retirement of this handle: only a retirement is SandboxRetiredError.
		expect(await rejectionError(sandbox.readFile('a.txt'))).not.toBeInstanceOf(SandboxRetiredError)
	})
})
