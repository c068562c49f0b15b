// The task sandbox end to end on this machine: the acquire against a scripted API port, then the
// REAL agent bundle over token TCP (deprivileged by setpriv, as the guest image runs it), the
// privilege probe, exec and files through the shared AgentSandbox, and destroy deleting the claim.
// The cluster itself is exercised in task-sandbox.cluster.test.ts.
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { KubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-task-sandbox.js'
import {
	createSandboxProvider,
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentUnauthorizedError,
	KubernetesPrivilegeProbeError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
	type Sandbox,
	SandboxConfigError,
	SandboxDestroyedError,
} from '../../../src/index.js'
import { KubernetesCreateOptionUnsupportedError } from '../../../src/kubernetes-entry.js'
import { isRunning } from '../../helpers/process-running.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { rejectionError } from './error-chain.js'
import { launchGuestAgent, SETPRIV_CHAIN } from './launched-guest.js'
import { podIpGuestConfig, scriptedBackendBase } from './local-guest-config.js'
import { type RecordingAgentProxy, startRecordingAgentProxy } from './recording-agent-proxy.js'
import {
	pod,
	readyClaim,
	type ScriptedApi,
	scriptedApi,
	warmClaimApi,
} from './scripted-api-port.js'

const agents: GuestAgent[] = []
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	await Promise.all(agents.splice(0).map((agent) => agent.stop()))
	await Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()))
})

async function guest(options: { privileged?: boolean; podUid?: string } = {}) {
	const token = randomUUID()
	const agent = await startGuestAgent({ token, privileged: options.privileged ?? false })
	agents.push(agent)
	const uid = options.podUid ?? token
	const api = warmClaimApi('pool-guest', () => pod(uid, '127.0.0.1'))
	return { agent, api, config: podIpGuestConfig(agent.port) }
}

/**
 * A deprivileged guest behind a recording front (every connection's first frame), acquired through
 * the scripted API; `dials` counts the transport's dial attempts after the acquire.
 */
async function proxiedSandbox(
	options: { env?: Readonly<Record<string, string>>; onDelete?: () => void } = {},
): Promise<{
	sandbox: KubernetesTaskSandbox
	proxy: RecordingAgentProxy
	api: ScriptedApi
	workspace: string
	token: string
	dials: () => number
}> {
	const token = randomUUID()
	const guest = await launchGuestAgent({
		token,
		launcher: SETPRIV_CHAIN,
		...(options.env ? { env: options.env } : {}),
	})
	cleanups.push(() => guest.stop())
	const proxy = await startRecordingAgentProxy({ host: '127.0.0.1', port: guest.port })
	cleanups.push(() => proxy.close())
	const api = scriptedApi((call) => {
		if (call.verb === 'POST') return call.body
		if (call.verb === 'DELETE') {
			options.onDelete?.()
			return {}
		}
		if (call.verb === 'PATCH') return {}
		if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-proxied')
		return pod(token, '127.0.0.1')
	})
	let dials = 0
	const config = podIpGuestConfig(proxy.port, {
		onDialAttempt: () => {
			dials++
		},
	})
	const sandbox = (await createKubernetesTaskSandbox(api.port, config, {
		rootDir: guest.workspace,
	})) as KubernetesTaskSandbox
	cleanups.unshift(() => sandbox.destroy())
	const afterAcquire = dials
	return {
		sandbox,
		proxy,
		api,
		workspace: guest.workspace,
		token,
		dials: () => dials - afterAcquire,
	}
}

/** A TCP echo service on this host's loopback (the test guest shares it). */
async function echoService(): Promise<{ port: number; server: Server }> {
	const server = createServer((socket) => socket.pipe(socket))
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
	const address = server.address()
	if (address === null || typeof address === 'string') throw new Error('no port')
	return { port: address.port, server }
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
	const deadline = Date.now() + timeoutMs
	for (;;) {
		const value = probe()
		if (value !== undefined) return value
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

/** Running, not a zombie: a killed grandchild of the agent is reaped by this machine's init. */
const alive = isRunning

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
		expect(walked).toEqual(['a.txt'])
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
		const error = await rejectionError(
			createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace }),
		)
		expect(error).toBeInstanceOf(KubernetesPrivilegeProbeError)
		expect(error).toMatchObject({ reason: 'privileged' })
		expect((error as KubernetesPrivilegeProbeError).offending).toContain('capBnd')
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims/)
	})

	it('surfaces a guest that refuses the pod uid as KubernetesAgentUnauthorizedError and deletes the claim', async () => {
		const { agent, api, config } = await guest({ podUid: 'some-other-pod-uid' })
		const error = await rejectionError(
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
			const error = await rejectionError(sandbox.exec('true'))
			expect(error).toBeInstanceOf(KubernetesSandboxGoneError)
			expect(error).toMatchObject({ operation: 'exec' })
			expect(sandbox.status).toBe('destroyed')
		} finally {
			await sandbox.destroy()
		}
	})
})

describe('the working Kubernetes sandbox against the guest agent', () => {
	it('serves exec, writeFile, readFile, listFiles, openTerminal and openTcpConnection from the guest agent', async () => {
		const { sandbox, workspace } = await proxiedSandbox()
		expect(await sandbox.exec('sh', ['-c', 'echo ran; id -u'])).toMatchObject({
			exitCode: 0,
			stdout: 'ran\n65534\n',
		})
		await sandbox.writeFile('dir/f.txt', 'bytes')
		expect(await readFile(join(workspace, 'dir/f.txt'), 'utf8')).toBe('bytes')
		expect((await sandbox.readFile('dir/f.txt')).toString()).toBe('bytes')
		expect((await sandbox.listFiles('.')).map((entry) => entry.path)).toEqual(['dir/f.txt'])

		const terminal = await sandbox.openTerminal({ size: { cols: 80, rows: 24 } })
		let screen = ''
		terminal.onData((chunk) => {
			screen += chunk
		})
		terminal.write('echo term-$((40+2))\n')
		await until('terminal output', () => (screen.includes('term-42') ? true : undefined))
		terminal.write('exit\n')
		expect((await terminal.exited).exitCode).toBe(0)

		const echo = await echoService()
		const connection = await sandbox.openTcpConnection({ port: echo.port })
		let echoed = ''
		connection.onData((chunk) => {
			echoed += Buffer.from(chunk).toString()
		})
		connection.write('ping through the guest')
		await until('echo', () => (echoed === 'ping through the guest' ? true : undefined))
		connection.end()
		await connection.closed
	})

	it('runs exec through the reserve-before-admission controller: reserve-execution, then execute naming the reserved id', async () => {
		const { sandbox, proxy, token } = await proxiedSandbox()
		const before = proxy.envelopes.length
		await sandbox.exec('true')
		const sent = proxy.envelopes.slice(before)
		expect(sent.map((envelope) => envelope.op)).toEqual(['reserve-execution', 'execute'])
		expect(sent[1]?.body).toMatchObject({
			command: 'true',
			executionId: expect.stringMatching(/^exec_/),
		})
		expect(sent.every((envelope) => envelope.token === token)).toBe(true)
	})

	it('an aborted exec kills the guest process and resolves only after the guest confirmed the cancellation', async () => {
		const { sandbox, proxy, workspace } = await proxiedSandbox()
		const controller = new AbortController()
		const running = sandbox.exec(
			'sh',
			['-c', 'trap "" TERM; echo $$ > pid; while :; do sleep 1; done'],
			{ signal: controller.signal },
		)
		const pidFile = join(workspace, 'pid')
		await until('the command to start', () => (existsSync(pidFile) ? true : undefined))
		const pid = Number((await readFile(pidFile, 'utf8')).trim())
		expect(alive(pid)).toBe(true)
		controller.abort()
		const result = await running
		// Dead the moment the result is in: the host waited for the guest, it did not walk away.
		expect(alive(pid)).toBe(false)
		expect(result).toMatchObject({ aborted: true })
		expect(result.exitCode).not.toBe(0)
		expect(proxy.envelopes.map((envelope) => envelope.op)).toContain('cancel-execution')
	})

	it('destroy() kills every terminal it handed out and awaits their exit before deleting the claim', async () => {
		let exitedAtDelete: boolean[] = []
		const exited: boolean[] = [false, false]
		const { sandbox, api } = await proxiedSandbox({
			onDelete: () => {
				exitedAtDelete = [...exited]
			},
		})
		const shells = await Promise.all(
			[0, 1].map(async (index) => {
				const terminal = await sandbox.openTerminal({ size: { cols: 80, rows: 24 } })
				void terminal.exited.then(() => {
					exited[index] = true
				})
				let screen = ''
				terminal.onData((chunk) => {
					screen += chunk
				})
				terminal.write('echo PID:$$\n')
				const pid = await until('the shell pid', () => /PID:(\d+)/.exec(screen)?.[1])
				return Number(pid)
			}),
		)
		expect(shells.every(alive)).toBe(true)
		await sandbox.destroy()
		expect(exitedAtDelete).toEqual([true, true])
		// The terminals' exits are `script`'s, reaped by the agent; the shells under it were SIGKILLed
		// with it, and on a loaded host the kernel may finish one a moment later.
		await until('the shells to be gone', () => (shells.some(alive) ? undefined : true))
		expect(api.log().filter((line) => line.startsWith('DELETE'))).toHaveLength(1)
	})

	it('dials a fresh connection for every request, so the guest pre-auth ceiling bounds every call, not the first only', async () => {
		// A guest whose pre-auth ceiling is 64 KiB (the host still assumes the 8 MiB default), without
		// binary frames, so a write's body is its connection's first frame.
		const { sandbox, proxy, token, dials } = await proxiedSandbox({
			env: {
				NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES: String(64 * 1024),
				NAMZU_AGENT_BINARY_FRAMES: '0',
			},
		})
		const connections = proxy.connections()
		await sandbox.writeFile('small.txt', 'a')
		await sandbox.readFile('small.txt')
		await sandbox.listFiles('.')
		expect(proxy.connections() - connections).toBeGreaterThanOrEqual(3)
		expect(dials()).toBe(proxy.connections() - connections)
		expect(proxy.envelopes.every((envelope) => envelope.token === token)).toBe(true)
		// Authenticated calls came before; this one is its connection's first frame all the same.
		await sandbox.writeFile('fits.txt', Buffer.alloc(40 * 1024, 1))
		const error = await rejectionError(sandbox.writeFile('big.txt', Buffer.alloc(100 * 1024, 1)))
		// The guest drops a first frame above its ceiling without running it.
		expect(error).toBeInstanceOf(Error)
		expect(await sandbox.exec('test', ['-e', 'big.txt'])).toMatchObject({ exitCode: 1 })
		expect(await sandbox.exec('test', ['-e', 'fits.txt'])).toMatchObject({ exitCode: 0 })
	})

	it('writes a body above the 8 MiB pre-auth ceiling in parts, each on its own connection (superseding release 14 refusal)', async () => {
		// A guest without binary frames: the part sequence is its route.
		const { sandbox, proxy, token } = await proxiedSandbox({
			env: { NAMZU_AGENT_BINARY_FRAMES: '0' },
		})
		const before = proxy.envelopes.length
		const body = Buffer.alloc(7 * 1024 * 1024 + 3, 0x5a)
		await sandbox.writeFile('large.bin', body)
		const writes = proxy.envelopes.slice(before).filter((envelope) => envelope.op === 'write-file')
		expect(writes.length).toBeGreaterThan(1)
		expect(writes.every((envelope) => envelope.body?.part !== undefined)).toBe(true)
		expect(writes.every((envelope) => envelope.token === token)).toBe(true)
		expect((await sandbox.readFile('large.bin')).equals(body)).toBe(true)
	})

	it('streams a body above the 8 MiB pre-auth ceiling on one connection to a guest with binary frames', async () => {
		const { sandbox, proxy, token } = await proxiedSandbox()
		const before = proxy.envelopes.length
		const body = Buffer.alloc(9 * 1024 * 1024 + 3, 0x5a)
		await sandbox.writeFile('streamed.bin', body)
		const writes = proxy.envelopes.slice(before).filter((envelope) => envelope.op === 'write-file')
		expect(writes).toHaveLength(1)
		expect(writes[0]?.body).toMatchObject({ sizeBytes: body.length, binaryFrames: true })
		expect(String(writes[0]?.body?.path)).toMatch(/streamed\.bin$/)
		expect(writes[0]?.token).toBe(token)
		expect((await sandbox.readFile('streamed.bin')).equals(body)).toBe(true)
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
			...scriptedBackendBase,
			onDialAttempt: ({ host }) => attempts.push(host),
		})
		const error = await rejectionError(createKubernetesTaskSandbox(api.port, config))
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
