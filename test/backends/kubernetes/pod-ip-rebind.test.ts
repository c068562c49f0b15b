// `agentAddress: 'pod-ip'` following a replaced pod, over two REAL deprivileged agents: the "old
// pod" and the "new pod" each sit behind a plain TCP relay bound to its own loopback address on the
// SAME port (as two pod IPs share agentPort), and the scripted API answers the pod read with
// whichever pod is live. Closing the old relay makes its address refuse connections, exactly the
// shape a released pod IP has; a listener that never accepts makes it drop SYNs instead.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { RemoteCancellationUnknownError, type Sandbox } from '../../../src/index.js'
import { type GuestAgent, startGuestAgent } from './deprivileged-agent.js'
import { rejectionError } from './error-chain.js'
import { podIpGuestConfig } from './local-guest-config.js'
import { pod, warmClaimApi } from './scripted-api-port.js'

const cleanups: Array<() => Promise<unknown> | unknown> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

interface Relay {
	readonly port: number
	close(): Promise<void>
}

/** A TCP relay on `host:port` to the agent at 127.0.0.1:`targetPort`. */
async function relay(host: string, port: number, targetPort: number): Promise<Relay> {
	const open = new Set<Socket>()
	const server: Server = createServer((inbound) => {
		const outbound = connect({ host: '127.0.0.1', port: targetPort })
		open.add(inbound).add(outbound)
		inbound.pipe(outbound).pipe(inbound)
		const drop = () => {
			inbound.destroy()
			outbound.destroy()
		}
		// A clean close lets the other side flush what it still holds; only an error cuts both.
		inbound.on('error', drop).on('close', () => outbound.end())
		outbound.on('error', drop).on('close', () => inbound.end())
	})
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject)
		server.listen(port, host, resolve)
	})
	const address = server.address()
	const close = () =>
		new Promise<void>((resolve) => {
			for (const socket of open) socket.destroy()
			server.close(() => resolve())
		})
	cleanups.push(close)
	return { port: typeof address === 'object' && address ? address.port : port, close }
}

/** A listener on `host:port` whose accept queue is full: further SYNs are dropped, never answered. */
async function blackhole(host: string, port: number): Promise<void> {
	const child: ChildProcess = spawn(
		'python3',
		[
			'-c',
			[
				'import socket, sys, time',
				's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
				`s.bind((${JSON.stringify(host)}, ${port})); s.listen(0)`,
				'fill = []',
				'for _ in range(4):',
				'  c = socket.socket(); c.setblocking(False)',
				`  try: c.connect((${JSON.stringify(host)}, ${port}))`,
				'  except BlockingIOError: pass',
				'  fill.append(c)',
				'time.sleep(0.2); print("ready", flush=True); time.sleep(3600)',
			].join('\n'),
		],
		{ stdio: ['ignore', 'pipe', 'inherit'] },
	)
	cleanups.push(() => child.kill('SIGKILL'))
	await new Promise<void>((resolve, reject) => {
		child.once('exit', (code) => reject(new Error(`blackhole exited ${code}`)))
		child.stdout?.once('data', () => resolve())
	})
}

async function guest(): Promise<GuestAgent & { token: string }> {
	const token = randomUUID()
	const agent = await startGuestAgent({ token })
	cleanups.push(() => agent.stop())
	return Object.assign(agent, { token })
}

/** An acquired pod-ip sandbox on the old pod (127.0.0.2), with a new pod ready at 127.0.0.3. */
async function podIpSandbox(options: { readonly oldPodDropsSyns?: boolean } = {}) {
	const oldAgent = await guest()
	const newAgent = await guest()
	const oldRelay = await relay('127.0.0.2', 0, oldAgent.port)
	const agentPort = oldRelay.port
	await relay('127.0.0.3', agentPort, newAgent.port)
	let live = { uid: oldAgent.token, ip: '127.0.0.2' }
	let podReads = 0
	const api = warmClaimApi('pool-ip', () => {
		podReads++
		return pod(live.uid, live.ip)
	})
	const dialed: string[] = []
	const config = podIpGuestConfig(agentPort, {
		onDialAttempt: ({ host }) => dialed.push(host),
	})
	const sandbox: Sandbox = await createKubernetesTaskSandbox(api.port, config, {
		rootDir: oldAgent.workspace,
	})
	cleanups.push(() => sandbox.destroy())
	return {
		sandbox,
		oldAgent,
		newAgent,
		dialed,
		podReads: () => podReads,
		/** The old pod's address stops answering; the API still shows the old pod. */
		async killOldPod() {
			await oldRelay.close()
			if (options.oldPodDropsSyns) await blackhole('127.0.0.2', agentPort)
		},
		/** The controller replaced the pod: the API now shows the new uid and IP. */
		replace() {
			live = { uid: newAgent.token, ip: '127.0.0.3' }
		},
	}
}

/** A loopback echo service the new guest's tcp-connect can reach. */
async function echoServer(): Promise<number> {
	const server = createServer((socket) => socket.pipe(socket))
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	cleanups.push(() => new Promise((resolve) => server.close(resolve)))
	const address = server.address()
	return typeof address === 'object' && address ? address.port : 0
}

type Scenario = Awaited<ReturnType<typeof podIpSandbox>>

const operations: Array<[string, (s: Scenario) => Promise<void>]> = [
	[
		'exec',
		async ({ sandbox }) => {
			expect(await sandbox.exec('sh', ['-c', 'echo "$HOME"'])).toMatchObject({ exitCode: 0 })
		},
	],
	[
		'listFiles',
		async ({ sandbox, newAgent }) => {
			expect(await sandbox.listFiles(newAgent.workspace)).toEqual([])
		},
	],
	[
		'readFile',
		async ({ sandbox, newAgent }) => {
			await expect(sandbox.readFile(`${newAgent.workspace}/absent`)).rejects.toMatchObject({
				message: expect.stringMatching(/ENOENT|not found|no such/i),
			})
		},
	],
	[
		'writeFile',
		async ({ sandbox, newAgent }) => {
			await sandbox.writeFile(`${newAgent.workspace}/w.txt`, 'on the new pod')
			expect(await readFile(`${newAgent.workspace}/w.txt`, 'utf8')).toBe('on the new pod')
		},
	],
	[
		'writeFile of a body written in parts',
		async ({ sandbox, newAgent }) => {
			const body = Buffer.alloc(12 * 1024 * 1024, 7)
			await sandbox.writeFile(`${newAgent.workspace}/big.bin`, body)
			expect((await readFile(`${newAgent.workspace}/big.bin`)).equals(body)).toBe(true)
		},
	],
	[
		'openTerminal',
		async ({ sandbox }) => {
			const terminal = await sandbox.openTerminal?.({ size: { cols: 80, rows: 24 } })
			expect(terminal).toBeDefined()
			terminal?.kill('SIGKILL')
			await terminal?.exited.catch(() => {})
		},
	],
	[
		'openTcpConnection',
		async ({ sandbox }) => {
			const port = await echoServer()
			const connection = await sandbox.openTcpConnection?.({ port })
			const echoed = new Promise<string>((resolve) =>
				connection?.onData((chunk) => resolve(Buffer.from(chunk).toString())),
			)
			connection?.write('ping')
			expect(await echoed).toBe('ping')
			connection?.destroy()
		},
	],
]

describe("agentAddress: 'pod-ip' after the pod's address stops answering", () => {
	it.each(operations)(
		'%s follows a replaced pod to its new IP and token and succeeds there',
		async (_operation, run) => {
			const scenario = await podIpSandbox()
			await scenario.killOldPod()
			scenario.replace()
			const readsBefore = scenario.podReads()
			scenario.dialed.length = 0
			await run(scenario)
			expect(scenario.dialed[0]).toBe('127.0.0.2')
			expect(scenario.dialed).toContain('127.0.0.3')
			expect(scenario.podReads() - readsBefore).toBe(1)
		},
		30_000,
	)

	it('leaves the original dial failure standing when the pod was not replaced, after one pod read', async () => {
		const scenario = await podIpSandbox()
		await scenario.killOldPod()
		const readsBefore = scenario.podReads()
		scenario.dialed.length = 0
		const error = await rejectionError(scenario.sandbox.exec('true'))
		// The call's own failure (the 2 s reserve bound ended the refused dials), not retried.
		expect(error).toMatchObject({ name: 'RemoteControlTimeoutError' })
		expect(scenario.dialed.every((host) => host === '127.0.0.2')).toBe(true)
		expect(scenario.podReads() - readsBefore).toBe(1)
	}, 60_000)

	it('follows a replaced pod whose old IP drops SYNs, though the 2 s control bound ends the dial first', async () => {
		const scenario = await podIpSandbox({ oldPodDropsSyns: true })
		await scenario.killOldPod()
		scenario.replace()
		scenario.dialed.length = 0
		const result = await scenario.sandbox.exec('echo', ['moved'])
		expect(result).toMatchObject({ exitCode: 0, stdout: 'moved\n' })
		expect(scenario.dialed[0]).toBe('127.0.0.2')
		expect(scenario.dialed.at(-1)).toBe('127.0.0.3')
	}, 30_000)

	it('never retries a command whose cancellation the guest could not confirm', async () => {
		const scenario = await podIpSandbox()
		const controller = new AbortController()
		scenario.dialed.length = 0
		const run = rejectionError(
			scenario.sandbox.exec('sleep', ['30'], { signal: controller.signal }),
		)
		await new Promise((resolve) => setTimeout(resolve, 500))
		await scenario.killOldPod()
		scenario.replace()
		controller.abort(new Error('caller gave up'))
		const error = await run
		expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
		// Its cancel attempts met the dead address; nothing was sent to the replacement pod.
		expect(scenario.dialed[0]).toBe('127.0.0.2')
		expect(scenario.dialed).not.toContain('127.0.0.3')
	}, 60_000)
})
