/**
 * `static` egress on the microVM tier, for real: a QEMU guest (TCG here) whose only ways out are
 * the agent's forward and the `guestfwd` to the sandbox's egress proxy on the host — the machine
 * layer's one proxy, the other tiers' — with the upstreams in the stand-in internet namespace the
 * local tier's egress tests use. Skipped without qemu, the `--vm` image or root (the namespace).
 */
import { execFile, execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readHostAddresses } from '../../src/backends/machine/network/egress-network.js'
import { GUEST_EGRESS_PROXY_ADDRESS } from '../../src/backends/microvm/guest-egress.js'
import { defaultImageDir } from '../../src/backends/microvm/microvm-image.js'
import type { Sandbox } from '../../src/contract/sandbox.js'
import type { EgressDecision } from '../../src/host/egress/egress-decision.js'
import {
	createMicroVMSandboxProvider,
	type MicroVMSandboxProvider,
} from '../../src/microvm-entry.js'
import { CONNECT, HTTPS_GET, LOOKUP } from '../backends/egress-guest-programs.js'
import { type EgressUpstream, startEgressUpstream } from '../host/egress/upstream-fixture.js'

function qemuPresent(): boolean {
	try {
		execFileSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' })
		return true
	} catch {
		return false
	}
}

const imageDir = await defaultImageDir()
const runnable =
	qemuPresent() &&
	imageDir !== undefined &&
	existsSync(join(imageDir, 'vmlinuz')) &&
	process.getuid?.() === 0

const execFileAsync = promisify(execFile)
const BOOT_MS = 400_000
const CASE_MS = 180_000
const SECRET = 'Bearer microvm-egress-5ecret'

/** `COUNT HOST PORT`: that many connects at once, each sending its index; prints the replies. */
const PARALLEL = `
const net = require('node:net')
const [count, host, port] = process.argv.slice(1)
const replies = []
for (let i = 0; i < Number(count); i++) {
	const s = net.connect(Number(port), host)
	s.setTimeout(30000, () => { console.log('TIMEOUT'); process.exit(0) })
	s.on('connect', () => s.write('n' + i))
	s.on('data', (d) => { replies.push(String(d)); s.destroy(); if (replies.length === Number(count)) { console.log(replies.sort().join(',')); process.exit(0) } })
	s.on('error', (e) => { console.log(e.code); process.exit(0) })
}
`

async function node(sandbox: Sandbox, program: string, ...args: string[]): Promise<string> {
	const result = await sandbox.exec('node', ['-e', program, ...args], { timeout: 120_000 })
	return result.stdout.trim()
}

describe.skipIf(!runnable)('static egress through the host proxy (microVM tier on QEMU)', () => {
	let upstream: EgressUpstream | undefined
	let provider: MicroVMSandboxProvider | undefined
	let sandbox: Sandbox
	let hostService: Server | undefined
	let hostPort = 0
	const decisions: EgressDecision[] = []

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		const { lookup, caPem } = upstream
		// A host service on every address, the guest's target in the attacks below.
		hostService = createServer((socket) => socket.end('HOST-SERVICE\n'))
		await new Promise<void>((resolve) => hostService?.listen(0, resolve))
		const address = hostService.address()
		hostPort = typeof address === 'object' && address !== null ? address.port : 0
		provider = createMicroVMSandboxProvider(
			{ tier: 'microvm', service: 'qemu' },
			{},
			{ egressTestSeam: { lookup, upstreamCa: [caPem] } },
		)
		sandbox = await provider.create({
			memoryLimitMb: 512,
			egress: {
				kind: 'static',
				allowedHosts: [
					'api.example.test',
					'tcp://api.example.test:5432',
					'creds.example.test',
					// Allowed by name, but it resolves to the host's loopback: the proxy's address guard.
					`tcp://private.example.test:${hostPort}`,
				],
			},
			egressCredentials: [{ host: 'creds.example.test', headers: { Authorization: SECRET } }],
			onEgressDecision: (decision) => decisions.push(decision),
		})
	}, BOOT_MS)

	afterAll(async () => {
		await provider?.close()
		await upstream?.close()
		hostService?.close()
	}, 120_000)

	it(
		'an allowed name is resolved and reached through the proxy (positive control), and reported',
		async () => {
			expect(await node(sandbox, CONNECT, 'api.example.test', '5432', 'ping')).toBe('reached ping')
			expect(decisions).toContainEqual(
				expect.objectContaining({ host: 'api.example.test', port: 5432, verdict: 'allow' }),
			)
			// events() carries the decisions the callback got.
			const events = sandbox.events?.({ replay: true })
			if (events === undefined) throw new Error('the sandbox has no events()')
			await sandbox.exec('true')
			const egress: string[] = []
			for await (const event of events) {
				if (event.type === 'egress-decision')
					egress.push(`${event.host}:${event.port}:${event.verdict}`)
				if (event.type === 'exec-exited' && event.command === 'true') break
			}
			expect(egress).toContain('api.example.test:5432:allow')
		},
		CASE_MS,
	)

	it(
		'serves several guest connections at once through the forward (one connector each)',
		async () => {
			expect(await node(sandbox, PARALLEL, '6', 'api.example.test', '5432')).toBe(
				'n0,n1,n2,n3,n4,n5',
			)
		},
		CASE_MS,
	)

	it(
		'a name not allowed is refused and a deny decision is reported',
		async () => {
			const before = decisions.length
			expect(await node(sandbox, LOOKUP, 'other.example.test')).not.toMatch(/^\d/)
			expect(await node(sandbox, CONNECT, 'other.example.test', '443')).not.toMatch(/^reached/)
			expect(decisions.slice(before)).toContainEqual(
				expect.objectContaining({ host: 'other.example.test', verdict: 'deny' }),
			)
		},
		CASE_MS,
	)

	it(
		'injects credentials outside the guest: the upstream sees a header the guest never had',
		async () => {
			const body = await node(sandbox, HTTPS_GET, 'https://creds.example.test/x')
			expect(JSON.parse(body)).toMatchObject({
				host: 'creds.example.test',
				headers: { authorization: SECRET },
			})
			const env = await sandbox.exec('sh', ['-c', 'env; cat /run/namzu-egress/* 2>/dev/null'])
			expect(env.stdout).not.toContain(SECRET)
		},
		CASE_MS,
	)

	it(
		'the guest reaches no other host address or port directly: not 10.0.2.2, not the host, not another forward port',
		async () => {
			const hostAddress = readHostAddresses().v4.find((address) => !address.startsWith('127.'))
			const targets: [string, number][] = [
				['10.0.2.2', hostPort],
				[GUEST_EGRESS_PROXY_ADDRESS, hostPort],
				...(hostAddress === undefined ? [] : ([[hostAddress, hostPort]] as [string, number][])),
				['private.example.test', hostPort],
			]
			const outcomes: string[] = []
			for (const [host, port] of targets) {
				const outcome = await node(sandbox, CONNECT, host, String(port), 'x')
				outcomes.push(`${host}: ${outcome}`)
				expect(outcome, `${host}:${port}`).not.toMatch(/^reached/)
			}
			console.log(`guest connects to the host service: ${outcomes.join('; ')}`)
			expect(decisions).toContainEqual(
				expect.objectContaining({ host: 'private.example.test', verdict: 'deny' }),
			)
			// Positive control: the same service answers on the host itself.
			const { stdout } = await execFileAsync('node', ['-e', CONNECT, '127.0.0.1', String(hostPort)])
			expect(stdout).toContain('reached HOST-SERVICE')
		},
		CASE_MS,
	)
})
