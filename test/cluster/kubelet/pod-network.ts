/**
 * One pod's network: a namespace with `lo` and an `eth0` veth whose peer is enslaved to the harness
 * bridge, holding the pod address. No default route is added inside the pod (only the on-link
 * /24), so the pod can reach its siblings and the bridge address and nothing else. Host numbers
 * are handed out lowest-free and returned on release; `eth0`'s MAC is fixed by the host number.
 */

import type { HarnessNetwork } from './harness-network.js'
import { ip, ipQuiet, runCommand } from './ip-command.js'
import { HarnessNetworkError } from './kubelet-errors.js'
import {
	lowestFreeHost,
	podAddress,
	podMacAddress,
	podNetnsName,
	podVethName,
} from './network-plan.js'

export interface PodNetwork {
	readonly netns: string
	readonly address: string
	readonly gateway: string
	release(): Promise<void>
}

export class PodNetworkAllocator {
	readonly #network: HarnessNetwork
	readonly #used = new Set<number>()

	constructor(network: HarnessNetwork) {
		this.#network = network
	}

	async create(): Promise<PodNetwork> {
		const host = lowestFreeHost(this.#used)
		const plan = this.#network.plan
		if (host === undefined) {
			throw new HarnessNetworkError('pod-range-full', `no free address left in ${plan.subnet}`)
		}
		this.#used.add(host)
		const netns = podNetnsName(plan, host)
		const veth = podVethName(plan, host)
		const address = podAddress(plan, host)
		let released = false
		const release = async () => {
			if (released) return
			released = true
			await ipQuiet(['netns', 'del', netns])
			await ipQuiet(['link', 'del', veth])
			this.#used.delete(host)
		}
		try {
			await ipQuiet(['netns', 'del', netns])
			await ipQuiet(['link', 'del', veth])
			await ip(['netns', 'add', netns])
			await ip([
				'link',
				'add',
				veth,
				'type',
				'veth',
				'peer',
				'name',
				'eth0',
				'address',
				podMacAddress(plan, host),
				'netns',
				netns,
			])
			await ip(['link', 'set', veth, 'master', plan.bridge, 'up'])
			await ip(['-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0'])
			await ip(['-n', netns, 'link', 'set', 'eth0', 'up'])
			await ip(['-n', netns, 'link', 'set', 'lo', 'up'])
			// As container runtimes do: any port may be bound without CAP_NET_BIND_SERVICE.
			await runCommand('ip', [
				'netns',
				'exec',
				netns,
				'sysctl',
				'-q',
				'-w',
				'net.ipv4.ip_unprivileged_port_start=0',
			])
			await this.#network.assertRouted(address)
		} catch (error) {
			await release()
			throw error
		}
		return { netns, address, gateway: plan.gateway, release }
	}
}
