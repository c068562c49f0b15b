// A ServiceAccount bound to a Role of exactly the given rules, and a token for it (TokenRequest):
// how the cluster suites act as a host with a narrower Role than the harness admin; and what the
// authorizer answers such a token.
import type { KubernetesRbacRule } from '../../../src/index.js'
import type { ClusterAccess } from '../../cluster/cluster-access.js'
import { KubeApi } from '../../cluster/kube-api.js'

export async function bindServiceAccount(
	api: KubeApi,
	ns: string,
	name: string,
	rules: readonly Pick<KubernetesRbacRule, 'apiGroups' | 'resources' | 'verbs'>[],
): Promise<string> {
	await api.create(`/api/v1/namespaces/${ns}/serviceaccounts`, {
		apiVersion: 'v1',
		kind: 'ServiceAccount',
		metadata: { name },
	})
	await api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
		apiVersion: 'rbac.authorization.k8s.io/v1',
		kind: 'Role',
		metadata: { name },
		rules: rules.map((rule) => ({
			apiGroups: [...rule.apiGroups],
			resources: [...rule.resources],
			verbs: [...rule.verbs],
		})),
	})
	await api.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
		apiVersion: 'rbac.authorization.k8s.io/v1',
		kind: 'RoleBinding',
		metadata: { name },
		roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
		subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
	})
	return serviceAccountToken(api, ns, name)
}

/** A token for an existing ServiceAccount (TokenRequest, one hour). */
export async function serviceAccountToken(api: KubeApi, ns: string, name: string): Promise<string> {
	const request = await api.create<{ status?: { token?: string } }>(
		`/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`,
		{
			apiVersion: 'authentication.k8s.io/v1',
			kind: 'TokenRequest',
			spec: { expirationSeconds: 3600 },
		},
	)
	const token = request.status?.token
	if (typeof token !== 'string' || token === '') throw new Error('TokenRequest returned no token')
	return token
}

/** One verb on one resource, as the authorizer is asked about it. */
export interface AccessTriple {
	readonly group: string
	readonly resource: string
	readonly verb: string
	readonly subresource?: string
}

/** What the API server's authorizer answers for `token` in `ns` (SelfSubjectAccessReview). */
export async function accessAllowed(
	access: ClusterAccess,
	token: string,
	ns: string,
	triple: AccessTriple,
): Promise<boolean> {
	const review = await new KubeApi({ ...access, token }).create<{ status?: { allowed?: boolean } }>(
		'/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
		{
			apiVersion: 'authorization.k8s.io/v1',
			kind: 'SelfSubjectAccessReview',
			spec: {
				resourceAttributes: {
					namespace: ns,
					group: triple.group,
					resource: triple.resource,
					verb: triple.verb,
					...(triple.subresource ? { subresource: triple.subresource } : {}),
				},
			},
		},
	)
	return review.status?.allowed === true
}
