/**
 * The harness bridge: claimed, created, checked and removed here, and nowhere else.
 *
 * Network safety (absolute): the bridge gets its address — and with it the kernel's on-link route
 * to the slot's /24 — BEFORE any pod exists, and `start` verifies that route before returning.
 * `assertRouted` is called before every dial of a pod address: the kernel must route it onto this
 * bridge with no gateway, or the dial is refused. Pods get no default route, forwarding is never
 * enabled, so nothing a pod sends can leave the machine. A slot whose /24 overlaps any existing
 * route is skipped. Slots are claimed with a pid file under `/run`; a slot whose owner is dead is
 * a crashed run, and its bridge, veths and namespaces are deleted before reuse.
 */
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ip, ipJson, ipQuiet } from './ip-command.js'
import { HarnessNetworkError } from './kubelet-errors.js'
import {
	type RouteLookup,
	type RouteRow,
	routeIsOnBridge,
	SLOT_COUNT,
	type SlotPlan,
	slotCollides,
	slotPlan,
} from './network-plan.js'
import { currentOwner, ownerFileAlive } from './process-owner.js'

export const SLOT_REGISTRY_DIR = '/run/namzu-process-kubelet'

/** Deletes every namespace, veth and the bridge of a slot (a crashed run's, or our own on stop). */
export async function removeSlotResources(plan: SlotPlan): Promise<void> {
	const namespaces = (await ip(['netns', 'list']))
		.split('\n')
		.map((line) => line.split(' ')[0] ?? '')
		.filter((name) => name.startsWith(`${plan.namePrefix}-`))
	for (const name of namespaces) await ipQuiet(['netns', 'del', name])
	const links = await ipJson<{ ifname?: string }>(['link', 'show'])
	for (const link of links) {
		const name = link.ifname ?? ''
		if (name.startsWith(`${plan.namePrefix}h`)) await ipQuiet(['link', 'del', name])
	}
	await ipQuiet(['link', 'del', plan.bridge])
}

const LOCK_WAIT_MS = 15_000
/** A lock older than this is a crashed holder's (claiming takes well under a second). */
const LOCK_STALE_MS = 30_000

/** Serialises slot claiming across processes with an atomic `mkdir`. */
async function lockRegistry(registryDir: string): Promise<() => Promise<void>> {
	const lock = join(registryDir, '.lock')
	const deadline = Date.now() + LOCK_WAIT_MS
	for (;;) {
		try {
			await mkdir(lock)
			return () => rm(lock, { recursive: true, force: true })
		} catch {
			const age = await stat(lock).then(
				(info) => Date.now() - info.mtimeMs,
				() => 0,
			)
			if (age > LOCK_STALE_MS) await rm(lock, { recursive: true, force: true })
			else if (Date.now() > deadline) {
				throw new HarnessNetworkError('no-free-slot', `timed out waiting for ${lock}`)
			}
			await new Promise((resolve) => setTimeout(resolve, 20))
		}
	}
}

/** Slot numbers that have a namespace, veth or bridge on this machine right now. */
async function slotsWithResources(): Promise<Set<number>> {
	const names = [
		...(await ip(['netns', 'list'])).split('\n').map((line) => line.split(' ')[0] ?? ''),
		...(await ipJson<{ ifname?: string }>(['link', 'show'])).map((link) => link.ifname ?? ''),
	]
	const slots = new Set<number>()
	for (const name of names) {
		const match = /^nzk(?:br)?(\d+)(?:-p|h|$)/.exec(name)
		if (match?.[1] !== undefined) slots.add(Number(match[1]))
	}
	return slots
}

/**
 * Takes ownership of a slot file unless a live process owns it: a dead owner's file is moved aside
 * atomically first; `wx` makes the creation exclusive, so of two racing kubelets one wins.
 */
async function claimSlotFile(file: string): Promise<boolean> {
	if (await ownerFileAlive(file)) return false
	const aside = `${file}.stale-${process.pid}`
	await rename(file, aside).catch(() => undefined)
	await rm(aside, { force: true })
	try {
		await writeFile(file, JSON.stringify(await currentOwner()), { flag: 'wx' })
		return true
	} catch {
		return false
	}
}

export class HarnessNetwork {
	readonly plan: SlotPlan
	readonly #ownerFile: string
	#stopped = false

	private constructor(plan: SlotPlan, ownerFile: string) {
		this.plan = plan
		this.#ownerFile = ownerFile
	}

	/**
	 * Clears what crashed runs left in ANY slot whose owner is dead, then claims the first free slot
	 * whose /24 collides with no route, and creates and verifies its bridge.
	 */
	static async start(registryDir: string = SLOT_REGISTRY_DIR): Promise<HarnessNetwork> {
		await mkdir(registryDir, { recursive: true })
		const unlock = await lockRegistry(registryDir)
		try {
			return await HarnessNetwork.#startLocked(registryDir)
		} finally {
			await unlock()
		}
	}

	static async #startLocked(registryDir: string): Promise<HarnessNetwork> {
		const routes = await ipJson<RouteRow>(['route', 'show'])
		const leftovers = await slotsWithResources()
		let chosen: HarnessNetwork | undefined
		for (let slot = 0; slot < SLOT_COUNT; slot++) {
			const plan = slotPlan(slot)
			const wanted = chosen === undefined && !slotCollides(plan, routes)
			if (!wanted && !leftovers.has(slot)) continue
			const file = join(registryDir, `slot-${slot}.json`)
			if (!(await claimSlotFile(file))) continue
			const network = new HarnessNetwork(plan, file)
			try {
				await removeSlotResources(plan)
				if (!wanted) {
					await rm(file, { force: true })
					continue
				}
				await network.#createBridge()
				chosen = network
			} catch (error) {
				await network.stop()
				throw error
			}
		}
		if (chosen !== undefined) return chosen
		throw new HarnessNetworkError(
			'no-free-slot',
			`no free harness network slot among ${SLOT_COUNT} (all owned or colliding with routes)`,
		)
	}

	async #createBridge(): Promise<void> {
		const { bridge, gateway, subnet } = this.plan
		await ip(['link', 'add', bridge, 'type', 'bridge'])
		await writeFile(`/proc/sys/net/ipv6/conf/${bridge}/disable_ipv6`, '1').catch(() => undefined)
		await ip(['addr', 'add', `${gateway}/24`, 'dev', bridge])
		await ip(['link', 'set', bridge, 'up'])
		const rows = await ipJson<RouteRow>(['route', 'show', subnet])
		if (!rows.some((row) => row.dev === bridge && row.gateway === undefined)) {
			throw new HarnessNetworkError(
				'route-missing',
				`the route ${subnet} dev ${bridge} did not appear after creating the bridge`,
			)
		}
		await this.assertRouted(`${this.plan.prefix}.2`)
	}

	/** The safety check before every dial of a pod address. Throws unless it routes to our bridge. */
	async assertRouted(address: string): Promise<void> {
		if (this.#stopped) {
			throw new HarnessNetworkError(
				'route-missing',
				`harness network stopped; not dialing ${address}`,
			)
		}
		let lookup: RouteLookup | undefined
		try {
			;[lookup] = await ipJson<RouteLookup>(['route', 'get', address])
		} catch (error) {
			throw new HarnessNetworkError('route-missing', `no route to ${address}`, { cause: error })
		}
		if (lookup === undefined || !routeIsOnBridge(this.plan, address, lookup)) {
			throw new HarnessNetworkError(
				'route-missing',
				`${address} is not routed onto ${this.plan.bridge} (${JSON.stringify(lookup)}); refusing to dial`,
			)
		}
	}

	/** Removes the bridge and every pod namespace and veth of this slot, then frees the slot. */
	async stop(): Promise<void> {
		if (this.#stopped) return
		this.#stopped = true
		await removeSlotResources(this.plan)
		await rm(this.#ownerFile, { force: true })
	}
}

/** Slot files in the registry, for diagnostics and tests. */
export async function listSlotFiles(registryDir: string = SLOT_REGISTRY_DIR): Promise<string[]> {
	return (await readdir(registryDir).catch(() => [])).filter((name) => name.startsWith('slot-'))
}
