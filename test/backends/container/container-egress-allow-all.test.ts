/**
 * `allow-all` on the container tier (runc and crun): slirp4netns attached to the container's
 * namespace before it starts, with the local tier's host-address guard inside. An outside
 * listener (a stand-in internet namespace) is reached; the host's own addresses, slirp's gateway
 * alias and link-local are refused, while the host itself reaches the same listener (the control).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, connect as netConnect, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { LocalNetworkUnavailableError } from '../../../src/backends/machine/network/network-errors.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { type StandInInternet, startStandInInternet } from '../local/stand-in-internet.js'
import { CONNECT, EGRESS_RUNTIMES, node } from './container-egress-support.js'
import {
	guestImage,
	makeStateDir,
	processesMentioning,
	removeStateDir,
} from './container-test-support.js'

const RUNTIMES = EGRESS_RUNTIMES
const anySkip = RUNTIMES.every(([, skip]) => skip !== undefined)

function hostProbe(host: string, port: number): Promise<string> {
	return new Promise((resolve) => {
		const socket = netConnect(port, host)
		socket.setTimeout(5000, () => resolve('TIMEOUT'))
		socket.on('data', (data) => {
			resolve(`reached ${data}`)
			socket.destroy()
		})
		socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
	})
}

/** The host's non-loopback IPv4 addresses. */
function hostAddresses(): string[] {
	return Object.values(networkInterfaces())
		.flatMap((entries) => entries ?? [])
		.filter((entry) => entry.family === 'IPv4' && !entry.internal)
		.map((entry) => entry.address)
}

let internet: StandInInternet | undefined
let stateDir = ''
const hostListener: Server = createServer((socket) => {
	socket.on('error', () => undefined)
	socket.end('host')
})
let hostPort = 0

beforeAll(async () => {
	if (anySkip) return
	internet = await startStandInInternet()
	stateDir = await makeStateDir('allow-all')
	await new Promise<void>((resolve) => hostListener.listen(0, '0.0.0.0', resolve))
	const address = hostListener.address()
	hostPort = typeof address === 'object' && address ? address.port : 0
}, 60_000)

afterAll(async () => {
	hostListener.close()
	await internet?.close()
	if (stateDir !== '') await removeStateDir(stateDir)
}, 60_000)

describe.skipIf(RUNTIMES[0]?.[1] !== undefined)('a missing network tool (runc)', () => {
	it('is named before anything is claimed: nothing is left in the state directory', async () => {
		const provider = createContainerSandboxProvider(
			{
				tier: 'container',
				image: guestImage(),
				stateDir,
				tools: { slirp4netns: '/nonexistent/slirp4netns', ip: '/nonexistent/ip' },
			},
			{ outputs: { source: { type: 'inImage' } } },
		)
		try {
			const allowAll = await provider
				.create({ egress: { kind: 'allow-all' } })
				.catch((error: unknown) => error)
			expect(allowAll).toBeInstanceOf(LocalNetworkUnavailableError)
			expect((allowAll as LocalNetworkUnavailableError).missing.map((tool) => tool.tool)).toEqual([
				'slirp4netns',
			])
			const proxied = await provider
				.create({ egress: { kind: 'static', allowedHosts: ['api.example.test'] } })
				.catch((error: unknown) => error)
			expect((proxied as LocalNetworkUnavailableError).missing.map((tool) => tool.tool)).toEqual([
				'ip',
			])
			expect(readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
			// Control: deny-all needs none of them.
			const closed = await provider.create()
			expect((await closed.exec('true', [])).exitCode).toBe(0)
		} finally {
			await provider.close()
		}
	}, 60_000)
})

describe.each(RUNTIMES)('allow-all egress on the container tier (%s)', (runtime, skip) => {
	let provider: ContainerSandboxProvider
	let sandbox: Sandbox
	const outside = () => {
		if (!internet) throw new Error('no stand-in internet')
		return internet
	}

	beforeAll(async () => {
		if (skip) return
		provider = createContainerSandboxProvider(
			{ tier: 'container', runtime, image: guestImage(), stateDir },
			{ outputs: { source: { type: 'inImage' } } },
		)
		sandbox = await provider.create({ egress: { kind: 'allow-all' } })
	}, 60_000)

	afterAll(async () => {
		await provider?.close()
	}, 60_000)

	it.skipIf(skip)('reaches a listener outside the host (positive control)', async () => {
		const { address, port } = outside()
		expect(await node(sandbox, CONNECT, [address, String(port)])).toBe('reached internet')
	})

	it.skipIf(skip)(
		"never reaches the host's own addresses, slirp's gateway alias or link-local",
		async () => {
			const { hostSideAddress } = outside()
			// Control: the listener answers on every host address, from the host.
			expect(await hostProbe(hostSideAddress, hostPort)).toBe('reached host')
			for (const address of [hostSideAddress, ...hostAddresses(), '10.0.2.2', '169.254.169.254']) {
				const seen = await node(sandbox, CONNECT, [address, String(hostPort)])
				expect({ address, seen }).toEqual({ address, seen: 'ECONNREFUSED' })
			}
			expect(await node(sandbox, CONNECT, ['127.0.0.1', String(hostPort)])).toBe('ECONNREFUSED')
		},
	)

	it.skipIf(skip)(
		"its namespace has slirp's interface and resolver, and slirp4netns lives in the sandbox's cgroups until destroy",
		async () => {
			const result = await sandbox.exec('cat', ['/proc/net/dev', '/etc/resolv.conf'])
			expect(result.stdout).toMatch(/\btap0:/)
			expect(result.stdout).toContain('nameserver 10.0.2.3')
			const other = await provider.create({ egress: { kind: 'allow-all' } })
			const group = `namzu-sbx-${other.id}`
			const slirps = () =>
				processesMentioning(group).filter((pid) => {
					try {
						return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'slirp4netns'
					} catch {
						return false
					}
				})
			expect(slirps()).toHaveLength(1)
			await other.destroy()
			expect(slirps()).toEqual([])
		},
	)
})
