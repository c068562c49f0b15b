import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { type EgressUpstream, startEgressUpstream } from '../../host/egress/upstream-fixture.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')

// `node -e` programs that ignore every proxy setting: a raw TCP connect and a DNS lookup.
// Prints `reached <first reply>`, `closed`, `TIMEOUT` or the error code.
const CONNECT = `
const net = require('node:net')
const [host, port, send] = process.argv.slice(1)
const s = net.connect(Number(port), host)
s.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
s.on('connect', () => s.write(send ?? ''))
s.on('data', (d) => { console.log('reached ' + d); process.exit(0) })
s.on('close', () => { console.log('closed'); process.exit(0) })
s.on('error', (e) => { console.log(e.code); process.exit(0) })
`
const LOOKUP = `require('node:dns').lookup(process.argv[1], (e, a) => console.log(e ? e.code : a))`

async function node(sandbox: Sandbox, program: string, ...args: string[]): Promise<string> {
	const result = await sandbox.exec('node', ['-e', program, ...args], { timeout: 15_000 })
	return result.stdout.trim()
}

describe.skipIf(skip)('static and resolver egress through the proxy (local tier)', () => {
	let upstream: EgressUpstream
	let provider: LocalSandboxProvider
	let removeState: (() => Promise<void>) | undefined
	let sandbox: Sandbox
	const decisions: EgressDecision[] = []

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		const state = await freshStateDir()
		removeState = state.remove
		provider = createLocalSandboxProvider(
			{ tier: 'process', stateDir: state.dir },
			{},
			{ egressTestSeam: { lookup: upstream.lookup, upstreamCa: [upstream.caPem] } },
		)
		sandbox = await provider.create({
			egress: { kind: 'static', allowedHosts: ['api.example.test', 'api.example.test:5432'] },
			onEgressDecision: (decision) => decisions.push(decision),
		})
	}, 60_000)

	afterAll(async () => {
		await provider?.close()
		await upstream?.close()
		await removeState?.()
	})

	it('an allowed name reaches its upstream over HTTPS with curl (positive control)', async () => {
		await sandbox.writeFile('upstream-ca.pem', upstream.caPem)
		const result = await sandbox.exec(
			'curl',
			['-sS', '--noproxy', '*', '--cacert', 'upstream-ca.pem', 'https://api.example.test/hi'],
			{ timeout: 15_000 },
		)
		expect(result.stderr).toBe('')
		expect(JSON.parse(result.stdout)).toMatchObject({ host: 'api.example.test', path: '/hi' })
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			port: 443,
			verdict: 'allow',
			layer: 'sni',
		})
	})

	it('a program ignoring proxy settings is captured (node net.connect to the name)', async () => {
		expect(await node(sandbox, CONNECT, 'api.example.test', '5432', 'ping')).toBe('reached ping')
	})
})
