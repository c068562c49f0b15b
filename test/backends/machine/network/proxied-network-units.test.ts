import { describe, expect, it } from 'vitest'
import { DEFAULT_NETWORK_TOOLS } from '../../../../src/backends/machine/network/egress-network.js'
import {
	boundUdpPorts,
	CAPTURE_ROUTE_SCRIPT,
	captureRouteCommand,
	listeningTcpPorts,
} from '../../../../src/backends/machine/network/proxied-network.js'

describe('proxied network pieces', () => {
	it('sets the capture route through nsenter, as root or in the sandbox user namespace', () => {
		expect(captureRouteCommand(DEFAULT_NETWORK_TOOLS, 42, true)).toEqual([
			'/usr/bin/nsenter',
			'--net=/proc/42/ns/net',
			'--',
			'/bin/sh',
			'-c',
			CAPTURE_ROUTE_SCRIPT,
			'sh',
			'/usr/sbin/ip',
		])
		expect(captureRouteCommand(DEFAULT_NETWORK_TOOLS, 42, false).slice(0, 4)).toEqual([
			'/usr/bin/nsenter',
			'--user=/proc/42/ns/user',
			'--net=/proc/42/ns/net',
			'--preserve-credentials',
		])
		expect(CAPTURE_ROUTE_SCRIPT).toContain('route add local default dev lo')
		expect(CAPTURE_ROUTE_SCRIPT).toContain('ip_unprivileged_port_start')
	})

	it('reads listening TCP ports and bound UDP ports from /proc tables', () => {
		const tcp6 = [
			'  sl  local_address                         remote_address                        st',
			'   0: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 0',
			'   1: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 0',
			'   2: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:C350 01 0',
		].join('\n')
		expect([...listeningTcpPorts(tcp6)].sort()).toEqual([443, 80])
		const udp = [
			'  sl  local_address rem_address   st',
			'   5: 0100007F:0035 00000000:0000 07 0',
		].join('\n')
		expect([...boundUdpPorts(udp)]).toEqual([53])
		expect(listeningTcpPorts('')).toEqual(new Set())
	})
})
