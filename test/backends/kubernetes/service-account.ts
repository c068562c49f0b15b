// A ServiceAccount bound to a Role of exactly the given rules, and a token for it (TokenRequest):
// how the cluster suites act as a host with a narrower Role than the harness admin.
import type { KubernetesRbacRule } from '../../../src/index.js'
import type { KubeApi } from '../../cluster/kube-api.js'

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
