// A CiliumNetworkPolicy CRD (cilium.io/v2, namespaced) so the API server stores, admits and
// garbage-collects the objects the Kubernetes backend writes; no Cilium agent runs, so nothing
// enforces them. The schema is structural and keeps every field under `spec` and `specs` as sent
// (x-kubernetes-preserve-unknown-fields), like upstream's does for the rule bodies this harness
// does not model; `status` is declared so the object shape matches the upstream one.

const preserved = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }

export const CILIUM_NETWORK_POLICY_CRD = {
	apiVersion: 'apiextensions.k8s.io/v1',
	kind: 'CustomResourceDefinition',
	metadata: { name: 'ciliumnetworkpolicies.cilium.io' },
	spec: {
		group: 'cilium.io',
		scope: 'Namespaced',
		names: {
			plural: 'ciliumnetworkpolicies',
			singular: 'ciliumnetworkpolicy',
			kind: 'CiliumNetworkPolicy',
			listKind: 'CiliumNetworkPolicyList',
			shortNames: ['cnp', 'ciliumnp'],
		},
		versions: [
			{
				name: 'v2',
				served: true,
				storage: true,
				subresources: { status: {} },
				schema: {
					openAPIV3Schema: {
						type: 'object',
						properties: {
							apiVersion: { type: 'string' },
							kind: { type: 'string' },
							metadata: { type: 'object' },
							spec: preserved,
							specs: { type: 'array', items: preserved },
							status: preserved,
						},
					},
				},
			},
		],
	},
} as const
