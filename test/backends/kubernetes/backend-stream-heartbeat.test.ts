// The Kubernetes backend's stream heartbeat, end to end against the REAL agent bundle (over token
// TCP, deprivileged as the guest image runs it), with a relay in between that records every frame
// each side sent. This backend turns the heartbeat on by default — `streamHeartbeatMs` 15000 on
// terminals and tcp connections, echoed by the agent — and `streamHeartbeatMs: 0` asks for none,
// so no heartbeat frame crosses in either direction (a 100 ms backend beside it shows the frames
// do flow in the same window). The acquire itself runs against a scripted API port.
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { KubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import { createKubernetesTaskSandbox } from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { DEFAULT_STREAM_HEARTBEAT_MS, type Sandbox } from '../../../src/index.js'
import {
	type FrameRecordingRelay,
	type RelayedConnection,
	startFrameRecordingRelay,
} from '../../helpers/frame-recording-relay.js'
import { startGuestAgent } from './deprivileged-agent.js'
import { podIpGuestConfig } from './local-guest-config.js'
import { pod, warmClaimApi } from './scripted-api-port.js'

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A loopback echo service inside the "guest" for `openTcpConnection`. */
async function echoService(): Promise<number> {
	const server: Server = createServer((socket) => {
		socket.on('error', () => {})
		socket.pipe(socket)
	})
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	cleanups.push(() => new Promise((resolve) => server.close(resolve)))
	const address = server.address()
	if (address === null || typeof address === 'string') throw new Error('no port')
	return address.port
}

/** A task sandbox from this backend whose guest connections all pass the recording relay. */
async function sandboxThroughRelay(
	overrides: Partial<KubernetesBackendConfig> = {},
): Promise<{ sandbox: Sandbox; relay: FrameRecordingRelay }> {
	const token = randomUUID()
	const agent = await startGuestAgent({ token })
	cleanups.push(() => agent.stop())
	const relay = await startFrameRecordingRelay(agent.port)
	cleanups.push(() => relay.close())
	const api = warmClaimApi('pool-guest', () => pod(token, '127.0.0.1'))
	const config = podIpGuestConfig(relay.port, overrides)
	const sandbox = await createKubernetesTaskSandbox(api.port, config, { rootDir: agent.workspace })
	cleanups.push(() => sandbox.destroy())
	return { sandbox, relay }
}

/** Opens one terminal and one tcp connection; returns their relayed connections. */
async function openStreams(sandbox: Sandbox, relay: FrameRecordingRelay) {
	const port = await echoService()
	const terminal = await sandbox.openTerminal?.({ size: { cols: 80, rows: 24 } })
	const connection = await sandbox.openTcpConnection?.({ port })
	if (terminal === undefined || connection === undefined) {
		throw new Error('this sandbox has no openTerminal or openTcpConnection')
	}
	cleanups.push(async () => terminal.kill())
	cleanups.push(async () => connection.destroy())
	const [terminalStream] = relay.opened('terminal')
	const [tcpStream] = relay.opened('tcp-connect')
	if (terminalStream === undefined || tcpStream === undefined) {
		throw new Error('the relay saw no terminal or tcp-connect stream')
	}
	return { terminal: terminalStream, tcp: tcpStream }
}

const requested = (stream: RelayedConnection) =>
	(stream.fromHost[0]?.body as Record<string, unknown> | undefined)?.heartbeatMs
const heartbeats = (frames: readonly Record<string, unknown>[]) =>
	frames.filter((frame) => frame.type === 'heartbeat')

describe('the Kubernetes backend stream heartbeat', () => {
	it('asks for a 15000 ms heartbeat on terminals and tcp connections by default, and the agent echoes it', async () => {
		const { sandbox, relay } = await sandboxThroughRelay()
		const streams = await openStreams(sandbox, relay)
		expect(DEFAULT_STREAM_HEARTBEAT_MS).toBe(15_000)
		for (const stream of [streams.terminal, streams.tcp]) {
			expect(requested(stream)).toBe(15_000)
			expect(stream.fromGuest[0]).toMatchObject({ type: 'ready', heartbeatMs: 15_000 })
		}
	})

	it('with streamHeartbeatMs 0 asks for none, gets no echo, and no heartbeat frame crosses either way', async () => {
		const off = await sandboxThroughRelay({ streamHeartbeatMs: 0 })
		const on = await sandboxThroughRelay({ streamHeartbeatMs: 100 })
		const quiet = await openStreams(off.sandbox, off.relay)
		const beating = await openStreams(on.sandbox, on.relay)
		await sleep(700)
		for (const stream of [quiet.terminal, quiet.tcp]) {
			expect(stream.fromHost[0]?.body).not.toHaveProperty('heartbeatMs')
			expect(stream.fromGuest[0]).toMatchObject({ type: 'ready' })
			expect(stream.fromGuest[0]).not.toHaveProperty('heartbeatMs')
			expect(heartbeats(stream.fromHost)).toEqual([])
			expect(heartbeats(stream.fromGuest)).toEqual([])
		}
		// The same window on a backend that asked for 100 ms: heartbeats flow both ways.
		for (const stream of [beating.terminal, beating.tcp]) {
			expect(requested(stream)).toBe(100)
			expect(heartbeats(stream.fromHost).length).toBeGreaterThan(0)
			expect(heartbeats(stream.fromGuest).length).toBeGreaterThan(0)
			expect(heartbeats(stream.fromHost)[0]).toEqual({ type: 'heartbeat' })
		}
	})
})
