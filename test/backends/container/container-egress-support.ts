/**
 * A container provider whose egress proxy resolves the test names to upstreams in a stand-in
 * internet namespace and trusts their test CA (the `egressTestSeam` hook), and the `node -e`
 * programs the container egress tests run inside (the image has no curl).
 */

import { afterAll, beforeAll } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import type { ContainerRuntime } from '../../../src/backends/container/runtime-argv.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'

export { BRIDGE_CONNECT, CONNECT, LOOKUP } from '../egress-guest-programs.js'

import { type EgressUpstream, startEgressUpstream } from '../../host/egress/upstream-fixture.js'
import {
	CRUN_PATH,
	containerSkipReason,
	guestImage,
	makeStateDir,
	removeStateDir,
} from './container-test-support.js'

/** runc and crun, each with why it cannot run here (undefined: it can). */
export const EGRESS_RUNTIMES: readonly [ContainerRuntime, string | undefined][] = [
	['runc', containerSkipReason()],
	['crun', containerSkipReason(CRUN_PATH)],
]

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
 * The file's fixture: started before its tests when some runtime can run here, closed after.
 * Returns its getter (which throws when none was started).
 */
export function useContainerEgressFixture(): () => ContainerEgressFixture {
	let fixture: ContainerEgressFixture | undefined
	beforeAll(async () => {
		if (EGRESS_RUNTIMES.every(([, skip]) => skip !== undefined)) return
		fixture = await startContainerEgressFixture()
	}, 60_000)
	afterAll(async () => {
		await fixture?.close()
	}, 60_000)
	return () => {
		if (!fixture) throw new Error('no container egress fixture')
		return fixture
	}
}

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
