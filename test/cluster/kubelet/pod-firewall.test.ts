/**
 * The process kubelet's pod firewall applied for real (root: two network namespaces joined by a
 * veth, `nft` inside the pod's): a connection opened while no policy selected the pod keeps
 * flowing once a policy isolates the pod's egress — conntrack ran from the pod's first packet —
 * while the isolation itself holds for a new connection out of the pod.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ip, runCommand } from './ip-command.js'
import { PodFirewalls } from './pod-firewall.js'
import type { FirewallInput } from './policy-firewall.js'

const root = process.getuid?.() === 0
const tag = randomUUID().slice(0, 6)
const podNs = `nzfw-p-${tag}`
const peerNs = `nzfw-h-${tag}`
const POD = '10.251.7.2'
const PEER = '10.251.7.1'

const pod = { namespace: 'ns', labels: { app: 'sbx' }, address: POD }
const firewall = (policies: object[]): FirewallInput => ({
	pod,
	policies,
	namespaces: new Map([['ns', {}]]),
	pods: [pod],
})
const denyEgress = {
	metadata: { name: 'deny', namespace: 'ns' },
	spec: { podSelector: {}, policyTypes: ['Egress'] },
}

/** A python one-liner run in `netns`; resolves with its stdout once it exits. */
function python(netns: string, program: string): { child: ChildProcess; output: Promise<string> } {
	const child = spawn('ip', ['netns', 'exec', netns, 'python3', '-c', program], {
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	let text = ''
	child.stdout?.on('data', (chunk: Buffer) => {
		text += chunk.toString()
	})
	const output = new Promise<string>((resolve) => child.once('exit', () => resolve(text.trim())))
	return { child, output }
}

async function untilListening(netns: string, port: number): Promise<void> {
	for (let tries = 0; tries < 200; tries++) {
		const listening = await runCommand('ip', ['netns', 'exec', netns, 'ss', '-Hltn'])
		if (listening.includes(`:${port}`)) return
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
	throw new Error(`nothing listens on ${port} in ${netns}`)
}

describe.skipIf(!root)('the pod firewall in a real network namespace (root)', () => {
	let dir = ''

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'namzu-pod-firewall-'))
		await ip(['netns', 'add', podNs])
		await ip(['netns', 'add', peerNs])
		await ip(['link', 'add', `nzfwa${tag}`, 'type', 'veth', 'peer', 'name', `nzfwb${tag}`])
		await ip(['link', 'set', `nzfwa${tag}`, 'netns', podNs])
		await ip(['link', 'set', `nzfwb${tag}`, 'netns', peerNs])
		await ip(['-n', podNs, 'addr', 'add', `${POD}/24`, 'dev', `nzfwa${tag}`])
		await ip(['-n', peerNs, 'addr', 'add', `${PEER}/24`, 'dev', `nzfwb${tag}`])
		for (const [ns, dev] of [
			[podNs, `nzfwa${tag}`],
			[peerNs, `nzfwb${tag}`],
		] as const) {
			await ip(['-n', ns, 'link', 'set', dev, 'up'])
			await ip(['-n', ns, 'link', 'set', 'lo', 'up'])
		}
	})

	afterAll(async () => {
		for (const ns of [podNs, peerNs]) await ip(['netns', 'del', ns]).catch(() => undefined)
		if (dir) await rm(dir, { recursive: true, force: true })
	})

	it('a connection opened while no policy selected the pod still gets its answer once a policy isolates egress, and a new one out is refused', async () => {
		const firewalls = new PodFirewalls(dir)
		await firewalls.apply('pod', podNs, firewall([]))
		// The pod's server answers 1.5 s after the connection came in: after the policy below.
		const server = python(
			podNs,
			`import socket,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('${POD}',7000)); s.listen(1)
c,_=s.accept(); time.sleep(1.5); c.sendall(b'answer\\n'); time.sleep(1)`,
		)
		await untilListening(podNs, 7000)
		const client = python(
			peerNs,
			`import socket
s=socket.create_connection(('${POD}',7000)); s.settimeout(6)
try: print(s.recv(100).decode().strip())
except Exception as e: print('error', e)`,
		)
		await new Promise((resolve) => setTimeout(resolve, 500))
		await firewalls.apply('pod', podNs, firewall([denyEgress]))
		expect(await client.output).toBe('answer')
		await server.output

		// The isolation holds: the pod cannot open a connection of its own to the peer.
		const listener = python(
			peerNs,
			`import socket
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('${PEER}',7001)); s.listen(1); s.settimeout(4)
try: s.accept(); print('reached')
except Exception: print('nothing')`,
		)
		await untilListening(peerNs, 7001)
		const out = python(
			podNs,
			`import socket
try: socket.create_connection(('${PEER}',7001), timeout=2); print('connected')
except Exception as e: print('refused')`,
		)
		expect(await out.output).toBe('refused')
		expect(await listener.output).toBe('nothing')
	}, 30_000)
})
