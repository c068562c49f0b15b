/**
 * The harness network on the real machine: the bridge route exists before any pod, the dial check
 * refuses every address that is not routed onto our bridge, and a crashed run's leftovers are
 * removed at the next start. Only route LOOKUPS are made for foreign addresses — nothing is sent.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { HarnessNetwork, SLOT_REGISTRY_DIR } from './harness-network.js'
import { HarnessNetworkError } from './kubelet-errors.js'
import { SLOT_COUNT, slotPlan } from './network-plan.js'

function ipText(...args: string[]): string {
	return execFileSync('ip', args, { encoding: 'utf8' })
}

describe('harness network', () => {
	it('creates its bridge with the route to its /24 before any pod, and removes it on stop', async () => {
		const network = await HarnessNetwork.start()
		const { bridge, subnet } = network.plan
		try {
			const routes = JSON.parse(ipText('-j', 'route', 'show', subnet)) as {
				dev?: string
				gateway?: string
			}[]
			expect(routes).toContainEqual(expect.objectContaining({ dev: bridge }))
			expect(routes.every((route) => route.gateway === undefined)).toBe(true)
			await expect(network.assertRouted(`${network.plan.prefix}.77`)).resolves.toBeUndefined()
		} finally {
			await network.stop()
		}
		expect(ipText('-o', 'link', 'show')).not.toContain(`${bridge}:`)
		await expect(network.assertRouted(`${network.plan.prefix}.77`)).rejects.toBeInstanceOf(
			HarnessNetworkError,
		)
	})

	it('refuses to dial an address that is not routed onto its bridge', async () => {
		const network = await HarnessNetwork.start()
		try {
			const other = slotPlan((network.plan.slot + 1) % SLOT_COUNT)
			for (const address of ['203.0.113.9', '192.168.77.5', `${other.prefix}.200`, '127.0.0.1']) {
				await expect(network.assertRouted(address)).rejects.toMatchObject({
					reason: 'route-missing',
				})
			}
		} finally {
			await network.stop()
		}
	})

	it("removes a crashed run's bridge and namespaces at the next start", async () => {
		// A free slot (no owner file, no resources), made to look like a crashed run's.
		const taken = ipText('netns', 'list') + ipText('-o', 'link', 'show')
		let slot = SLOT_COUNT - 1
		while (
			slot > 0 &&
			(existsSync(join(SLOT_REGISTRY_DIR, `slot-${slot}.json`)) || taken.includes(`nzkbr${slot}:`))
		)
			slot--
		const plan = slotPlan(slot)
		writeFileSync(
			join(SLOT_REGISTRY_DIR, `slot-${slot}.json`),
			JSON.stringify({ pid: process.pid, startTicks: 'dead' }),
		)
		ipText('link', 'add', plan.bridge, 'type', 'bridge')
		ipText('netns', 'add', `${plan.namePrefix}-p9`)
		const network = await HarnessNetwork.start()
		try {
			expect(ipText('netns', 'list')).not.toContain(`${plan.namePrefix}-p9`)
			if (network.plan.slot !== slot)
				expect(ipText('-o', 'link', 'show')).not.toContain(`${plan.bridge}:`)
		} finally {
			await network.stop()
		}
		expect(existsSync(join(SLOT_REGISTRY_DIR, `slot-${slot}.json`))).toBe(false)
	})
})
