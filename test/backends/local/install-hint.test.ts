import { describe, expect, it } from 'vitest'
import {
	debianInstallCommand,
	missingProgramLine,
} from '../../../src/backends/local/install-hint.js'

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
})
