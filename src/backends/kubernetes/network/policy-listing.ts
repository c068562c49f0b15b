/**
 * The policy reads both checks share: the paths, one GET of the named object and one LIST per
 * collection. A LIST the server refuses (403) or does not serve (404) is reported as an unread
 * source, never as a namespace holding no policy; any other failure travels as itself.
 */
import { KubernetesApiError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { KubernetesObject } from '../kubernetes-objects.js'
import type { KubernetesPolicyKind, UnreadPolicySource } from './network-errors.js'
import { type ReadPolicy, readCiliumPolicy, readNetworkPolicy } from './policy-model.js'

const networkPolicies = (ns: string) =>
	`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`
const ciliumPolicies = (ns: string) => `/apis/cilium.io/v2/namespaces/${ns}/ciliumnetworkpolicies`

export const policyPaths = {
	networkPolicies,
	ciliumPolicies,
	policy: (ns: string, kind: KubernetesPolicyKind, name: string) =>
		`${kind === 'NetworkPolicy' ? networkPolicies(ns) : ciliumPolicies(ns)}/${name}`,
}

export interface ListedPolicies {
	readonly policies: readonly ReadPolicy[]
	readonly unread: readonly UnreadPolicySource[]
}

function unreadSource(
	error: unknown,
	resource: UnreadPolicySource['resource'],
	apiGroup: UnreadPolicySource['apiGroup'],
): UnreadPolicySource | undefined {
	if (!(error instanceof KubernetesApiError)) return undefined
	if (error.status === 403) return { resource, apiGroup, status: 'forbidden', verb: 'list' }
	if (error.status === 404) return { resource, apiGroup, status: 'unserved', verb: 'list' }
	return undefined
}

/** The GET of one named policy; `undefined` when it does not exist. */
export async function getPolicy(
	api: KubernetesApiPort,
	namespace: string,
	kind: KubernetesPolicyKind,
	name: string,
	signal?: AbortSignal,
): Promise<KubernetesObject | undefined> {
	try {
		return await api.get(policyPaths.policy(namespace, kind, name), signal ? { signal } : {})
	} catch (error) {
		if (error instanceof KubernetesApiError && error.status === 404) return undefined
		throw error
	}
}

/** Every policy of the namespace: core always, Cilium's when `cilium`. */
export async function listPolicies(
	api: KubernetesApiPort,
	namespace: string,
	cilium: boolean,
	signal?: AbortSignal,
): Promise<ListedPolicies> {
	const policies: ReadPolicy[] = []
	const unread: UnreadPolicySource[] = []
	const collections = [
		{
			path: networkPolicies(namespace),
			resource: 'networkpolicies' as const,
			apiGroup: 'networking.k8s.io' as const,
			kind: 'NetworkPolicy' as const,
			read: readNetworkPolicy,
		},
		...(cilium
			? [
					{
						path: ciliumPolicies(namespace),
						resource: 'ciliumnetworkpolicies' as const,
						apiGroup: 'cilium.io' as const,
						kind: 'CiliumNetworkPolicy' as const,
						read: readCiliumPolicy,
					},
				]
			: []),
	]
	for (const collection of collections) {
		try {
			const list = await api.list(collection.path, signal ? { signal } : {})
			if (!Array.isArray(list.items)) {
				policies.push({
					ok: false,
					kind: collection.kind,
					name: `(the ${collection.resource} list)`,
					problem: 'the LIST answered without an items list',
				})
				continue
			}
			for (const item of list.items) policies.push(collection.read(item))
		} catch (error) {
			const source = unreadSource(error, collection.resource, collection.apiGroup)
			if (!source) throw error
			unread.push(source)
		}
	}
	return { policies, unread }
}
