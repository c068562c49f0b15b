/**
 * The verbs a pool-only host (one that sets `warmPoolName` and never creates a `Sandbox`) needs,
 * as data, each rule naming the call site that needs it. A host can compare its applied `Role`
 * against this instead of a list copied from a page. No `sandboxes` write, no policy write, no
 * `sandboxtemplates` or `persistentvolumeclaims` read: no call site on the pool-only path issues one.
 */

export type KubernetesRbacVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete'

export interface KubernetesRbacRule {
	readonly apiGroups: readonly string[]
	readonly resources: readonly string[]
	readonly verbs: readonly KubernetesRbacVerb[]
	/** Where in this package the request is made. */
	readonly callSites: readonly string[]
}

export const KUBERNETES_CLAIMANT_RBAC_RULES: readonly KubernetesRbacRule[] = Object.freeze([
	{
		apiGroups: ['extensions.agents.x-k8s.io'],
		resources: ['sandboxclaims'],
		verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete'],
		callSites: [
			'create: acquire-task-sandbox.ts (POST the claim)',
			'get: readiness-poll.ts (readiness reads)',
			'watch: readiness-watch.ts (readiness from the POST; without it the reads are polled)',
			'list: fleet-verbs.ts (releaseKubernetesTaskSandboxes, readKubernetesTaskCapacity)',
			'patch: lease-renewal.ts (shutdownTime renewal)',
			'delete: kubernetes-sandbox-provider.ts (destroy), acquire cleanup, release',
		],
	},
	{
		apiGroups: ['agents.x-k8s.io'],
		resources: ['sandboxes'],
		verbs: ['get'],
		callSites: ['get: the bound Sandbox (workspace/egress checks read it by name)'],
	},
	{
		apiGroups: ['extensions.agents.x-k8s.io'],
		resources: ['sandboxwarmpools'],
		verbs: ['get'],
		callSites: [
			'get: fleet-verbs.ts (readKubernetesTaskCapacity), warm-pool-roster.ts (the pool selector, once)',
		],
	},
	{
		apiGroups: [''],
		resources: ['pods'],
		verbs: ['get', 'list'],
		callSites: [
			'get: acquire-task-sandbox.ts (uid/IP read, capacity/image-pull diagnosis)',
			'list: fleet-verbs.ts (Pending pods), warm-pool-roster.ts (the pool pods probed before a claim)',
		],
	},
	{
		apiGroups: ['networking.k8s.io'],
		resources: ['networkpolicies'],
		verbs: ['get', 'list'],
		callSites: [
			'get: network/network-verifier.ts (the named egress policy)',
			'list: network/policy-listing.ts (egress union and agent-port ingress checks)',
		],
	},
	{
		apiGroups: ['cilium.io'],
		resources: ['ciliumnetworkpolicies'],
		verbs: ['get', 'list'],
		callSites: ['get, list: network/policy-listing.ts under engine cilium (egress or ingress)'],
	},
])
