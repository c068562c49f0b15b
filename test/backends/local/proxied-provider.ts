/**
 * A local provider whose egress proxy resolves the test names to upstreams in a stand-in internet
 * namespace and trusts their test CA (the `egressTestSeam` hook), for the end-to-end egress tests.
 */
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { type EgressUpstream, startEgressUpstream } from '../../host/egress/upstream-fixture.js'
import { freshStateDir } from './local-test-support.js'

export interface ProxiedProvider {
	readonly upstream: EgressUpstream
	readonly provider: LocalSandboxProvider
	close(): Promise<void>
}

export async function startProxiedProvider(): Promise<ProxiedProvider> {
	const upstream = await startEgressUpstream()
	const state = await freshStateDir()
	const provider = createLocalSandboxProvider(
		{ tier: 'process', stateDir: state.dir },
		{},
		{ egressTestSeam: { lookup: upstream.lookup, upstreamCa: [upstream.caPem] } },
	)
	return {
		upstream,
		provider,
		close: async () => {
			await provider.close()
			await upstream.close()
			await state.remove()
		},
	}
}
