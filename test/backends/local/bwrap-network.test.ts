import { describe, expect, it } from 'vitest'
import {
	allowAllBwrapArgs,
	allowAllFds,
	parseBwrapInfo,
} from '../../../src/backends/local/bwrap-network.js'
import { ALLOW_ALL_RESOLV_CONF } from '../../../src/backends/machine/network/egress-network.js'

describe('allow-all plumbing', () => {
	it('numbers the info and lifetime descriptors after the ones before', () => {
		expect(allowAllFds(6)).toEqual({ infoFd: 6, syncFd: 7 })
		expect(allowAllBwrapArgs(allowAllFds(6))).toEqual(['--info-fd', '6', '--sync-fd', '7'])
		expect(ALLOW_ALL_RESOLV_CONF).toBe('nameserver 10.0.2.3\n')
	})

	it.each([
		['{"child-pid": 42}', 42],
		['{\n    "child-pid": 781,\n    "net-namespace": 4026532181\n}', 781],
		['{"child-pid": 4', undefined],
		['{"child-pid": -1}', undefined],
		['[]', undefined],
	])('parses bwrap info %j ⇒ %s', (text, pid) => {
		expect(parseBwrapInfo(text)).toBe(pid)
	})
})
