/**
 * A container provider whose egress proxy resolves the test names to upstreams in a stand-in
 * internet namespace and trusts their test CA (the `egressTestSeam` hook), and the `node -e`
 * programs the container egress tests run inside (the image has no curl).
 */
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import type { ContainerRuntime } from '../../../src/backends/container/runtime-argv.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { type EgressUpstream, startEgressUpstream } from '../../host/egress/upstream-fixture.js'
import { guestImage, makeStateDir, removeStateDir } from './container-test-support.js'

export interface ContainerEgressFixture {
	readonly upstream: EgressUpstream
	/** A provider on `runtime` (one per runtime, closed with the fixture). */
	provider(runtime: ContainerRuntime, image?: string): ContainerSandboxProvider
	close(): Promise<void>
}

/** One stand-in upstream per test file (its namespace is named after the process). */
export async function startContainerEgressFixture(): Promise<ContainerEgressFixture> {
	const upstream = await startEgressUpstream()
	const providers: ContainerSandboxProvider[] = []
	let stateDir: string
	try {
		stateDir = await makeStateDir('egress')
	} catch (error) {
		await upstream.close()
		throw error
	}
	return {
		upstream,
		provider: (runtime, image = guestImage()) => {
			const provider = createContainerSandboxProvider(
				{ tier: 'container', runtime, image, stateDir },
				{ outputs: { source: { type: 'inImage' } } },
				{},
				{ egressTestSeam: { lookup: upstream.lookup, upstreamCa: [upstream.caPem] } },
			)
			providers.push(provider)
			return provider
		},
		close: async () => {
			await Promise.all(providers.map((provider) => provider.close()))
			await upstream.close()
			await removeStateDir(stateDir)
		},
	}
}

/**
 * A raw TCP connect that ignores every proxy setting: `HOST PORT [SEND]`. Prints `reached <first
 * reply>`, `closed`, `TIMEOUT` or the error code.
 */
export const CONNECT = `
const net = require('node:net')
const [host, port, send] = process.argv.slice(1)
const s = net.connect(Number(port), host)
s.setTimeout(5000, () => { console.log('TIMEOUT'); process.exit(0) })
s.on('connect', () => s.write(send ?? ''))
s.on('data', (d) => { console.log('reached ' + d); process.exit(0) })
s.on('close', () => { console.log('closed'); process.exit(0) })
s.on('error', (e) => { console.log(e.code); process.exit(0) })
`

export const LOOKUP = `require('node:dns').lookup(process.argv[1], (e, a) => console.log(e ? e.code : a))`

/**
 * node's own http / https, no proxy agent (node ignores proxy variables): \`URL [CA_FILE]
 * [SERVERNAME]\`. Prints the body, or the error code.
 */
export const GET = `
const [url, caFile, servername] = process.argv.slice(1)
const u = new URL(url)
const lib = require(u.protocol === 'https:' ? 'node:https' : 'node:http')
const options = { timeout: 5000 }
if (caFile) options.ca = require('node:fs').readFileSync(caFile)
if (servername) options.servername = servername
const req = lib.get(url, options, (res) => {
	let body = ''
	res.on('data', (d) => { body += d })
	res.on('end', () => console.log(body))
})
req.on('timeout', () => { console.log('TIMEOUT'); req.destroy() })
req.on('error', (e) => console.log(e.code ?? e.message))
`

export async function node(
	sandbox: Sandbox,
	program: string,
	args: readonly string[],
	env: Record<string, string> = {},
	flags: readonly string[] = [],
): Promise<string> {
	const result = await sandbox.exec('node', [...flags, '-e', program, ...args], {
		timeout: 15_000,
		env,
	})
	return result.stdout.trim()
}
