import { describe, expect, it } from 'vitest'
import {
	debianInstallCommand,
	missingProgramLine,
	missingProgramsLine,
} from '../../../../src/backends/machine/launch/install-hint.js'
import {
	LocalNetworkUnavailableError,
	type MissingNetworkTool,
	missingNetworkToolsLine,
} from '../../../../src/backends/machine/network/network-errors.js'

describe('install hints', () => {
	it.each([
		['bubblewrap', 0, 'apt-get install -y bubblewrap'],
		['bubblewrap', 1000, 'sudo apt-get install -y bubblewrap'],
		['nftables', 0, 'apt-get install -y nftables'],
	])('installs %s as uid %s with %s', (name, uid, command) => {
		expect(debianInstallCommand(name, uid)).toBe(command)
	})

	it('names the program, the path looked at and the fix, in that order, on one line', () => {
		expect(
			missingProgramLine('bubblewrap', '/usr/bin/bwrap', 'apt-get install -y bubblewrap'),
		).toBe('needs bubblewrap at /usr/bin/bwrap: apt-get install -y bubblewrap')
	})

	it.each([
		[[], 'needs : fix'],
		[[{ program: 'a', path: '/a' }], 'needs a at /a: fix'],
		[
			[
				{ program: 'a', path: '/a' },
				{ program: 'b', path: '/b' },
			],
			'needs a at /a and b at /b: fix',
		],
		[
			[
				{ program: 'a', path: '/a' },
				{ program: 'b', path: '/b' },
				{ program: 'c', path: '/c' },
			],
			'needs a at /a, b at /b and c at /c: fix',
		],
	])('lists several programs on the same one line: %j', (missing, line) => {
		expect(missingProgramsLine(missing, 'fix')).toBe(line)
	})
})

describe('allow-all tools that are missing', () => {
	const sudo = process.getuid?.() === 0 ? '' : 'sudo '
	const missing: MissingNetworkTool[] = [
		{ tool: 'slirp4netns', path: '/x/slirp4netns', fix: 'f1', debianPackage: 'slirp4netns' },
		{ tool: 'nft', path: '/x/nft', fix: 'f2', debianPackage: 'nftables' },
		{ tool: 'tun', path: '/dev/net/tun', fix: 'chmod 0666 /dev/net/tun' },
	]

	it('are one line with one apt-get for every package, then what else is needed', () => {
		expect(missingNetworkToolsLine(missing)).toBe(
			`needs slirp4netns at /x/slirp4netns, nft at /x/nft and tun at /dev/net/tun: ${sudo}apt-get install -y slirp4netns nftables; chmod 0666 /dev/net/tun`,
		)
		expect(new LocalNetworkUnavailableError(missing).fix).toBe(
			`${sudo}apt-get install -y slirp4netns nftables; chmod 0666 /dev/net/tun`,
		)
	})
})
