/**
 * The Firecracker driver to its protocol boundary (no Firecracker binary or usable KVM here): the
 * exact API request sequence and bodies, recorded by an HTTP server on a unix socket answering as
 * Firecracker does (`204`, or `400` with `{ fault_message }`); a fault becomes a named error and
 * stops the sequence; and the hybrid-vsock `CONNECT <port>` / `OK <hostport>` handshake against a
 * peer speaking it in front of the real agent.
 */
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
	FIRECRACKER_AGENT_VSOCK_PORT,
	firecrackerAgentEnvironment,
	startFirecrackerGuest,
} from '../../src/backends/microvm/firecracker-api.js'
import { AgentDialFailedError, VsockAgentTransport } from '../../src/index.js'
import { FirecrackerApiError } from '../../src/microvm-entry.js'
import { type StartedAgent, startAgent } from '../helpers/agent-process.js'

const cleanups: Array<() => Promise<unknown> | unknown> = []

afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function scratchDir(): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-fc-test-'))
	cleanups.push(() => rm(dir, { recursive: true, force: true }))
	return dir
}

interface Recorded {
	readonly method: string
	readonly path: string
	readonly contentType: string | undefined
	readonly body: unknown
}

/** An API socket that records each request and answers `answer(path)` (status, body). */
async function recordingApi(
	path: string,
	answer: (path: string) => { status: number; body?: string } = () => ({ status: 204 }),
): Promise<Recorded[]> {
	const recorded: Recorded[] = []
	const server: HttpServer = createHttpServer((req, res) => {
		let text = ''
		req.setEncoding('utf8')
		req.on('data', (chunk: string) => {
			text += chunk
		})
		req.on('end', () => {
			recorded.push({
				method: req.method ?? '',
				path: req.url ?? '',
				contentType: req.headers['content-type'],
				body: JSON.parse(text),
			})
			const reply = answer(req.url ?? '')
			res.writeHead(reply.status, reply.body ? { 'Content-Type': 'application/json' } : {})
			res.end(reply.body)
		})
	})
	server.listen(path)
	await once(server, 'listening')
	cleanups.push(() => new Promise((resolve) => server.close(resolve)))
	return recorded
}

const SPEC = {
	vcpus: 2,
	memoryMb: 512,
	kernel: '/images/vmlinux',
	initramfs: '/images/initramfs.cpio.gz',
	rootDisk: '/images/rootfs.ext4',
	vsockUdsPath: '/run/fc/vsock.sock',
}

describe('Firecracker API driver', () => {
	it('configures machine, kernel, root drive and vsock, then starts, in that order with those bodies', async () => {
		const api = join(await scratchDir(), 'api.sock')
		const recorded = await recordingApi(api)
		await startFirecrackerGuest(api, SPEC)
		expect(recorded).toEqual([
			{
				method: 'PUT',
				path: '/machine-config',
				contentType: 'application/json',
				body: { vcpu_count: 2, mem_size_mib: 512, smt: false },
			},
			{
				method: 'PUT',
				path: '/boot-source',
				contentType: 'application/json',
				body: {
					kernel_image_path: '/images/vmlinux',
					initrd_path: '/images/initramfs.cpio.gz',
					boot_args: 'console=ttyS0 reboot=k panic=1 pci=off quiet',
				},
			},
			{
				method: 'PUT',
				path: '/drives/rootfs',
				contentType: 'application/json',
				body: {
					drive_id: 'rootfs',
					path_on_host: '/images/rootfs.ext4',
					is_root_device: true,
					is_read_only: false,
				},
			},
			{
				method: 'PUT',
				path: '/vsock',
				contentType: 'application/json',
				body: { guest_cid: 3, uds_path: '/run/fc/vsock.sock' },
			},
			{
				method: 'PUT',
				path: '/actions',
				contentType: 'application/json',
				body: { action_type: 'InstanceStart' },
			},
		])
	})

	it('turns a fault body into FirecrackerApiError naming the request, and sends nothing after it', async () => {
		const api = join(await scratchDir(), 'api.sock')
		const recorded = await recordingApi(api, (path) =>
			path === '/boot-source'
				? {
						status: 400,
						body: JSON.stringify({ fault_message: 'Invalid kernel path: No such file' }),
					}
				: { status: 204 },
		)
		const error = await startFirecrackerGuest(api, SPEC).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(FirecrackerApiError)
		expect(error).toMatchObject({
			reason: 'firecracker-api-fault',
			method: 'PUT',
			path: '/boot-source',
			statusCode: 400,
			faultMessage: 'Invalid kernel path: No such file',
		})
		expect(recorded.map((entry) => entry.path)).toEqual(['/machine-config', '/boot-source'])
	})

	it('reports a status without a fault body, and an API socket nobody serves, as FirecrackerApiError', async () => {
		const dir = await scratchDir()
		const api = join(dir, 'api.sock')
		await recordingApi(api, () => ({ status: 500, body: 'not json' }))
		const plain = await startFirecrackerGuest(api, SPEC).catch((caught: unknown) => caught)
		expect(plain).toMatchObject({ statusCode: 500, path: '/machine-config' })
		expect((plain as FirecrackerApiError).faultMessage).toBeUndefined()
		const absent = await startFirecrackerGuest(join(dir, 'none.sock'), SPEC).catch(
			(caught: unknown) => caught,
		)
		expect(absent).toBeInstanceOf(FirecrackerApiError)
		expect((absent as FirecrackerApiError).statusCode).toBe(0)
	})

	it('gives the guest agent no tcp listener and no token variable on vsock', () => {
		const env = firecrackerAgentEnvironment('/workspace')
		expect(env).toEqual({
			NAMZU_AGENT_VSOCK_PORT: String(FIRECRACKER_AGENT_VSOCK_PORT),
			NAMZU_SANDBOX_WORKSPACE: '/workspace',
		})
		for (const name of [
			'NAMZU_AGENT_TCP_PORT',
			'NAMZU_AGENT_BIND_TOKEN',
			'NAMZU_AGENT_REQUIRE_TOKEN',
		]) {
			expect(env).not.toHaveProperty(name)
		}
	})
})

/**
 * A hybrid-vsock peer as Firecracker's docs describe it: read `CONNECT <port>\n`, answer
 * `OK <host port>\n` and splice to the agent when the port is the agent's, else close.
 */
async function hybridVsockPeer(
	udsPath: string,
	agent: StartedAgent,
	seen: string[],
): Promise<Server> {
	let hostPort = 1_073_741_824
	const server = createServer((guestSide: Socket) => {
		let line = ''
		const onData = (chunk: Buffer) => {
			line += chunk.toString('latin1')
			const newline = line.indexOf('\n')
			if (newline < 0) return
			guestSide.off('data', onData)
			const request = line.slice(0, newline)
			seen.push(request)
			const rest = Buffer.from(line.slice(newline + 1), 'latin1')
			if (request !== `CONNECT ${FIRECRACKER_AGENT_VSOCK_PORT}`) {
				guestSide.destroy()
				return
			}
			const agentSide = connect(agent.socketPath ?? '')
			agentSide.once('connect', () => {
				guestSide.write(`OK ${hostPort++}\n`)
				if (rest.length > 0) agentSide.write(rest)
				guestSide.pipe(agentSide)
				agentSide.pipe(guestSide)
			})
			agentSide.on('error', () => guestSide.destroy())
			guestSide.on('error', () => agentSide.destroy())
		}
		guestSide.on('data', onData)
	})
	server.listen(udsPath)
	await once(server, 'listening')
	cleanups.push(() => new Promise((resolve) => server.close(resolve)))
	return server
}

describe('Firecracker hybrid vsock', () => {
	it('dials through CONNECT <port> / OK <hostport> to the real agent and serves exec over it', async () => {
		const agent = await startAgent()
		cleanups.push(() => agent.stop())
		const udsPath = join(await scratchDir(), 'vsock.sock')
		const seen: string[] = []
		await hybridVsockPeer(udsPath, agent, seen)
		const transport = new VsockAgentTransport({
			kind: 'vsock',
			udsPath,
			port: FIRECRACKER_AGENT_VSOCK_PORT,
		})
		const health = await transport.healthz(AbortSignal.timeout(30_000))
		expect(health.ok).toBe(true)
		let out = ''
		for await (const event of transport.executeStreamed(
			{ command: 'sh', args: ['-c', 'echo over-vsock'] },
			AbortSignal.timeout(60_000),
		)) {
			if (event.type !== 'stdout_delta') continue
			if (typeof event.data === 'string') out += event.data
			if (Buffer.isBuffer(event.bytes)) out += event.bytes.toString('utf8')
		}
		expect(out).toBe('over-vsock\n')
		expect(seen.length).toBeGreaterThanOrEqual(2)
		expect(new Set(seen)).toEqual(new Set([`CONNECT ${FIRECRACKER_AGENT_VSOCK_PORT}`]))
	})

	it('fails the dial when the peer closes instead of answering OK (no agent on that port)', async () => {
		const agent = await startAgent()
		cleanups.push(() => agent.stop())
		const udsPath = join(await scratchDir(), 'vsock.sock')
		const seen: string[] = []
		await hybridVsockPeer(udsPath, agent, seen)
		const transport = new VsockAgentTransport(
			{ kind: 'vsock', udsPath, port: 9999 },
			{ connectRetryBudgetMs: 500, connectRetryIntervalMs: 50 },
		)
		const error = await transport.healthz().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect(seen[0]).toBe('CONNECT 9999')
	})
})
