import { describe, expect, it } from 'vitest'
import { BubblewrapUnavailableError } from '../../src/backends/local/index.js'
import { LocalNetworkUnavailableError } from '../../src/backends/machine/index.js'
import { missingPrerequisiteLine } from '../../src/cli/cli-bubblewrap.js'

// The one line the CLI prints instead of an error and a stack trace when a host program is missing.
describe('missingPrerequisiteLine', () => {
	const sudo = process.getuid?.() === 0 ? '' : 'sudo '

	it('names a missing bubblewrap, where it was looked for and how to install it', () => {
		expect(missingPrerequisiteLine(new BubblewrapUnavailableError('/x/bwrap', 'ENOENT'))).toBe(
			`namzu-sandbox needs bubblewrap at /x/bwrap: ${sudo}apt-get install -y bubblewrap`,
		)
	})

	it('names the allow-all tools --allow-network needs the same way, with one install command', () => {
		const error = new LocalNetworkUnavailableError([
			{ tool: 'slirp4netns', path: '/x/slirp4netns', fix: 'f', debianPackage: 'slirp4netns' },
			{ tool: 'nft', path: '/x/nft', fix: 'f', debianPackage: 'nftables' },
		])
		expect(missingPrerequisiteLine(error)).toBe(
			`namzu-sandbox needs slirp4netns at /x/slirp4netns and nft at /x/nft: ${sudo}apt-get install -y slirp4netns nftables (or run without --allow-network)`,
		)
	})
})
