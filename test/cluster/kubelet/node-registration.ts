/**
 * The Node this kubelet registers and keeps Ready: the object, its status (pure builders), and the
 * heartbeat — the Ready condition's `lastHeartbeatTime` and the node Lease in `kube-node-lease` are
 * renewed every `HEARTBEAT_INTERVAL_MS`, so a node-lifecycle controller would never taint it. A
 * failed heartbeat (paused API server) is retried on the next beat.
 */
import { cpus, release, totalmem } from 'node:os'
import { isStatus, type KubeClient } from './kube-client.js'

export const HEARTBEAT_INTERVAL_MS = 10_000
export const LEASE_DURATION_SECONDS = 40
export const NODE_LABEL = 'kubelet.namzu.dev/process-kubelet'
export const KUBELET_VERSION = 'v0.0.0-namzu-process-kubelet'

export function nodeObject(name: string): object {
	return {
		apiVersion: 'v1',
		kind: 'Node',
		metadata: {
			name,
			labels: {
				'kubernetes.io/hostname': name,
				'kubernetes.io/os': 'linux',
				'kubernetes.io/arch': 'amd64',
				[NODE_LABEL]: 'true',
			},
		},
		spec: {},
	}
}

export function nodeStatus(name: string, address: string, now: string): object {
	const capacity = {
		cpu: String(cpus().length),
		memory: `${Math.floor(totalmem() / 1024)}Ki`,
		pods: '110',
		'ephemeral-storage': '10Gi',
	}
	const pressure = (type: string, reason: string) => ({
		type,
		status: 'False',
		reason,
		message: `kubelet has no ${type}`,
		lastHeartbeatTime: now,
		lastTransitionTime: now,
	})
	return {
		status: {
			capacity,
			allocatable: capacity,
			conditions: [
				pressure('MemoryPressure', 'KubeletHasSufficientMemory'),
				pressure('DiskPressure', 'KubeletHasNoDiskPressure'),
				pressure('PIDPressure', 'KubeletHasSufficientPID'),
				{
					type: 'Ready',
					status: 'True',
					reason: 'KubeletReady',
					message: 'process kubelet is posting ready status',
					lastHeartbeatTime: now,
					lastTransitionTime: now,
				},
			],
			addresses: [
				{ type: 'InternalIP', address },
				{ type: 'Hostname', address: name },
			],
			nodeInfo: {
				machineID: '',
				systemUUID: '',
				bootID: '',
				kernelVersion: release(),
				osImage: 'namzu process kubelet',
				containerRuntimeVersion: 'bubblewrap://0.8',
				kubeletVersion: KUBELET_VERSION,
				kubeProxyVersion: '',
				operatingSystem: 'linux',
				architecture: 'amd64',
			},
		},
	}
}

/** `MicroTime` as the API server wants it in a Lease. */
export function microTime(date: Date): string {
	return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

export function leaseObject(name: string, now: Date): object {
	return {
		apiVersion: 'coordination.k8s.io/v1',
		kind: 'Lease',
		metadata: { name, namespace: 'kube-node-lease' },
		spec: {
			holderIdentity: name,
			leaseDurationSeconds: LEASE_DURATION_SECONDS,
			renewTime: microTime(now),
		},
	}
}

export async function registerNode(
	client: KubeClient,
	name: string,
	address: string,
	signal?: AbortSignal,
): Promise<void> {
	try {
		await client.post('/api/v1/nodes', nodeObject(name), signal)
	} catch (error) {
		if (!isStatus(error, 409)) throw error
	}
	await heartbeat(client, name, address, signal)
	await clearLifecycleTaints(client, name, signal)
}

/** Taints a node-lifecycle controller (or TaintNodesByCondition at create) puts on a non-Ready node. */
export const LIFECYCLE_TAINT_KEYS: readonly string[] = [
	'node.kubernetes.io/not-ready',
	'node.kubernetes.io/unreachable',
]

interface Taint {
	readonly key: string
	readonly effect?: string
}

/** The node's taints without the lifecycle ones, or undefined when there is nothing to remove. */
export function withoutLifecycleTaints(taints: readonly Taint[] | undefined): Taint[] | undefined {
	const kept = (taints ?? []).filter((taint) => !LIFECYCLE_TAINT_KEYS.includes(taint.key))
	return kept.length === (taints ?? []).length ? undefined : kept
}

/**
 * Admission (`TaintNodesByCondition`) taints a node created before it reports Ready, and no
 * node-lifecycle controller runs here to lift the taint once it does: the kubelet lifts it itself,
 * guarded by `resourceVersion` so a concurrent change is not overwritten.
 */
async function clearLifecycleTaints(
	client: KubeClient,
	name: string,
	signal?: AbortSignal,
): Promise<void> {
	const node = await client.get<{
		metadata?: { resourceVersion?: string }
		spec?: { taints?: Taint[] }
	}>(`/api/v1/nodes/${name}`, signal)
	const kept = withoutLifecycleTaints(node.spec?.taints)
	if (kept === undefined) return
	await client.patch(
		`/api/v1/nodes/${name}`,
		'merge',
		{ metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints: kept } },
		signal,
	)
}

export async function heartbeat(
	client: KubeClient,
	name: string,
	address: string,
	signal?: AbortSignal,
): Promise<void> {
	const now = new Date()
	await client.patch(
		`/api/v1/nodes/${name}/status`,
		'strategic',
		nodeStatus(name, address, now.toISOString().replace(/\.\d{3}Z$/, 'Z')),
		signal,
	)
	const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`
	try {
		await client.patch(
			leasePath,
			'merge',
			{ spec: { holderIdentity: name, renewTime: microTime(now) } },
			signal,
		)
	} catch (error) {
		if (!isStatus(error, 404)) throw error
		await client.post(
			'/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
			leaseObject(name, now),
			signal,
		)
	}
}
