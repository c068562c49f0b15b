/**
 * Applies each pod's NetworkPolicy firewall (policy-firewall.ts renders it) inside the pod's own
 * network namespace with `nft -f`, and only when the script changed since the last apply — the
 * kubelet calls this on every sync, so a policy created, changed or deleted, or a peer pod that
 * came or went, is in force within one sync interval.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCommand } from './ip-command.js'
import type { KubeClient } from './kube-client.js'
import type { ObjectList, Pod } from './kube-types.js'
import {
	type FirewallInput,
	type FirewallPod,
	type Labels,
	renderPodFirewall,
} from './policy-firewall.js'

/** A pod this kubelet runs, with the namespace its firewall goes into. */
export interface RunningPod {
	readonly uid: string
	readonly netns: string
	readonly pod: Pod
}

interface Snapshot {
	readonly policies: readonly unknown[]
	readonly namespaces: ReadonlyMap<string, Labels>
	readonly pods: readonly FirewallPod[]
}

function firewallPod(pod: Pod): FirewallPod {
	return {
		namespace: pod.metadata.namespace ?? 'default',
		labels: pod.metadata.labels ?? {},
		...(pod.status?.podIP ? { address: pod.status.podIP } : {}),
	}
}

export class PodFirewalls {
	readonly #dir: string
	readonly #applied = new Map<string, string>()
	#snapshot: Snapshot = { policies: [], namespaces: new Map(), pods: [] }

	constructor(stateDir: string) {
		this.#dir = stateDir
	}

	/** Renders and, when changed, applies the firewall of pod `uid` in `netns`. */
	async apply(uid: string, netns: string, input: FirewallInput): Promise<void> {
		const script = renderPodFirewall(input)
		if (this.#applied.get(uid) === script) return
		const file = join(this.#dir, `firewall-${uid}.nft`)
		await writeFile(file, script)
		await runCommand('ip', ['netns', 'exec', netns, 'nft', '-f', file])
		this.#applied.set(uid, script)
	}

	/** Re-reads policies and namespaces, then brings every running pod's firewall up to date. */
	async sync(
		client: KubeClient,
		allPods: readonly Pod[],
		running: readonly RunningPod[],
		signal: AbortSignal,
		log: (line: string) => void,
	): Promise<void> {
		const policies = await client.get<ObjectList<unknown>>(
			'/apis/networking.k8s.io/v1/networkpolicies',
			signal,
		)
		const namespaces = await client.get<
			ObjectList<{ metadata: { name?: string; labels?: Labels } }>
		>('/api/v1/namespaces', signal)
		this.#snapshot = {
			policies: policies.items,
			namespaces: new Map(
				namespaces.items.map((item) => [item.metadata.name ?? '', item.metadata.labels ?? {}]),
			),
			pods: allPods.map(firewallPod),
		}
		for (const entry of running) await this.applyTo(entry, log)
	}

	/** Applies the last snapshot's firewall to one pod (also right after its network exists). */
	async applyTo(entry: RunningPod, log: (line: string) => void): Promise<void> {
		try {
			await this.apply(entry.uid, entry.netns, { pod: firewallPod(entry.pod), ...this.#snapshot })
		} catch (error) {
			log(`firewall of ${entry.pod.metadata.name ?? entry.uid} failed: ${String(error)}`)
		}
	}

	forget(uid: string): void {
		this.#applied.delete(uid)
	}
}
