// The task sandbox end to end on this machine: the acquire against a scripted API port, then the
// REAL agent bundle over token TCP (deprivileged by setpriv, as the guest image runs it), the
// privilege probe, exec and files through the shared AgentSandbox, and destroy deleting the claim.
// The cluster itself is exercised in task-sandbox.cluster.test.ts.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import {
	createSandboxProvider,
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentUnauthorizedError,
	KubernetesCreateOptionUnsupportedError,
	KubernetesPrivilegeProbeError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
	type Sandbox,
	SandboxConfigError,
	SandboxDestroyedError,
} from '../../../src/index.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { pod, readyClaim, scriptedApi } from './scripted-api-port.js'

const agents: GuestAgent[] = []
afterEach(async () => {
	await Promise.all(agents.splice(0).map((agent) => agent.stop()))
})

async function guest(options: { privileged?: boolean; podUid?: string } = {}) {
	const token = randomUUID()
	const agent = await startGuestAgent({ token, privileged: options.privileged ?? false })
	agents.push(agent)
	const uid = options.podUid ?? token
	const api = scriptedApi((call) => {
		if (call.verb === 'POST') return call.body
		if (call.verb === 'DELETE' || call.verb === 'PATCH') return {}
		if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-guest')
		return pod(uid, '127.0.0.1')
	})
	const config = resolveKubernetesBackendConfig({
		tier: 'microvm',
		service: 'kubernetes',
		namespace: 'ns',
		access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
		sandboxTemplateName: 'task',
		warmPoolName: 'pool',
		agentAddress: 'pod-ip',
		agentPort: agent.port,
		readyPollIntervalMs: 5,
		readyTimeoutMs: 10_000,
	})
	return { agent, api, config }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
	try {
		await promise
	} catch (error) {
		return error
	}
	throw new Error('expected a rejection')
}

describe('Kubernetes task sandbox over a real agent', () => {
	it('acquires, proves the guest deprivileged, runs exec and files, and destroy deletes the claim', async () => {
		const { agent, api, config } = await guest()
		const sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})
		expect(sandbox).toBeInstanceOf(KubernetesTaskSandbox)
		expect(sandbox.id).toBe('pool-guest')
		const probe = api.calls.length
		const result = await sandbox.exec('sh', ['-c', 'echo hi; id -u'])
		expect(result).toMatchObject({ exitCode: 0, stdout: 'hi\n65534\n' })
		await sandbox.writeFile('a.txt', 'content')
		expect((await sandbox.readFile('a.txt')).toString()).toBe('content')
		const walked = []
		for await (const entry of sandbox.walkFiles?.('.', { maxEntries: 100 }) ?? [])
			walked.push(entry.path)
		expect(walked).toEqual([`${agent.workspace}/a.txt`])
		expect(api.calls.length).toBe(probe)

		await sandbox.destroy()
		await sandbox.destroy()
		expect(api.log().at(-1)).toMatch(
			/^DELETE \/apis\/extensions.agents.x-k8s.io\/v1beta1\/namespaces\/ns\/sandboxclaims\/namzu-task-/,
		)
		expect(api.log().filter((line) => line.startsWith('DELETE'))).toHaveLength(1)
		expect(sandbox.status).toBe('destroyed')
	})

	it('has no setNetworkPolicy and no spawnDetached, and does have walkFiles', async () => {
		const { agent, api, config } = await guest()
		const sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})
		try {
			expect('setNetworkPolicy' in sandbox).toBe(false)
			expect('spawnDetached' in sandbox).toBe(false)
			expect(typeof sandbox.walkFiles).toBe('function')
		} finally {
			await sandbox.destroy()
		}
	})

	it('refuses every call after destroy with KubernetesSandboxDestroyedError naming the operation', async () => {
		const { agent, api, config } = await guest()
		const sandbox: Sandbox = await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})
		await sandbox.destroy()
		const calls: Array<[string, () => unknown]> = [
			['exec', () => sandbox.exec('true')],
			['writeFile', () => sandbox.writeFile('x', 'y')],
			['readFile', () => sandbox.readFile('x')],
			['listFiles', () => sandbox.listFiles('.')],
			['openTerminal', () => sandbox.openTerminal?.({ size: { cols: 80, rows: 24 } })],
			['openTcpConnection', () => sandbox.openTcpConnection?.({ port: 80 })],
			['walkFiles', () => sandbox.walkFiles?.('.', { maxEntries: 100 })],
		]
		for (const [operation, call] of calls) {
			let caught: unknown
			try {
				await call()
			} catch (error) {
				caught = error
			}
			expect(caught, operation).toBeInstanceOf(KubernetesSandboxDestroyedError)
			expect(caught, operation).toBeInstanceOf(SandboxDestroyedError)
			expect((caught as Error).message, operation).toContain(`${operation}()`)
		}
	})

	it('refuses a privileged guest with KubernetesPrivilegeProbeError (privileged) and deletes the claim', async () => {
		const { agent, api, config } = await guest({ privileged: true })
		const error = await rejection(
			createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace }),
		)
		expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(error).toMatchObject({ reason: 'privileged' })
		expect((error as KubernetesPrivilegeProbeError).offending).toContain('capBnd')
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims/)
	})

	it('surfaces a guest that refuses the pod uid as KubernetesAgentUnauthorizedError and deletes the claim', async () => {
		const { agent, api, config } = await guest({ podUid: 'some-other-pod-uid' })
		const error = await rejection(
			createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace }),
		)
		expect(error).toBeInstanceOf(KubernetesAgentUnauthorizedError)
		expect((error as Error).message).not.toContain('some-other-pod-uid')
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims/)
	})

	it('refuses every call without dialing once the object is gone', async () => {
		const { agent, api, config } = await guest()
		const sandbox = (await createKubernetesTaskSandbox(api.port, config, {
			rootDir: agent.workspace,
		})) as KubernetesTaskSandbox
		try {
			sandbox.markGone(new Error('404'))
			await agent.stop()
			const error = await rejection(sandbox.exec('true'))
			expect(error).toBeInstanceOf(KubernetesSandboxGoneError)
			expect(error).toMatchObject({ operation: 'exec' })
			expect(sandbox.status).toBe('destroyed')
		} finally {
			await sandbox.destroy()
		}
	})
})

describe('service mode against a name that does not resolve', () => {
	it('rejects create() with KubernetesAgentAddressUnresolvableError naming the FQDN, at once, and deletes the claim', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-nodns')
			return pod('uid-x', '10.0.0.1')
		})
		const attempts: string[] = []
		const config = resolveKubernetesBackendConfig({
			tier: 'microvm',
			service: 'kubernetes',
			namespace: 'ns',
			access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
			sandboxTemplateName: 'task',
			warmPoolName: 'pool',
			readyPollIntervalMs: 5,
			onDialAttempt: ({ host }) => attempts.push(host),
		})
		const error = await rejection(createKubernetesTaskSandbox(api.port, config))
		expect(error).toBeInstanceOf(KubernetesAgentAddressUnresolvableError)
		expect(error).toMatchObject({ address: 'pool-nodns.ns.svc.cluster.local', code: 'ENOTFOUND' })
		expect((error as Error).message).toContain("agentAddress: 'pod-ip'")
		// ENOTFOUND is final: one connect attempt, no retry loop.
		expect(attempts).toEqual(['pool-nodns.ns.svc.cluster.local'])
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims/)
	})
})

describe('createSandboxProvider with the kubernetes arm', () => {
	const backend = {
		tier: 'microvm',
		service: 'kubernetes',
		namespace: 'ns',
		access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
		sandboxTemplateName: 'task',
		warmPoolName: 'pool',
	} as const

	it('type-checks without a cast and contacts nothing at construction', () => {
		const provider = createSandboxProvider({ backend })
		expect(provider.name).toBe('kubernetes')
	})

	it('refuses a bad field at construction', () => {
		expect(() => createSandboxProvider({ backend: { ...backend, agentPort: 0 } })).toThrow(
			SandboxConfigError,
		)
	})

	it('refuses per-sandbox env before any request', async () => {
		const provider = createSandboxProvider({ backend })
		await expect(provider.create({ env: { A: '1' } })).rejects.toBeInstanceOf(
			KubernetesCreateOptionUnsupportedError,
		)
	})
})
