// KUBERNETES_CLAIMANT_RBAC_RULES against the real API server's RBAC: a ServiceAccount bound to a
// Role made of exactly those rules may issue every listed verb and none of the withheld ones
// (SelfSubjectAccessReview with its own token), and a pool-only host holding nothing else claims,
// holds (the lease PATCH included), enumerates and releases warm sandboxes. Without `list` on
// sandboxclaims only the two fleet verbs are refused with a 403, never create().
import { describe, expect, it } from 'vitest'
import {
	KUBERNETES_CLAIMANT_RBAC_RULES,
	type KubernetesBackendConfig,
	type KubernetesRbacRule,
	readKubernetesTaskCapacity,
	releaseKubernetesTaskSandboxes,
} from '../../../src/index.js'
import type { KubeObject } from '../../cluster/cluster-objects.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { rejection } from './error-chain.js'
import { backendAccess, listClaims, useKubernetesHarness } from './kubernetes-harness.js'
import {
	type AccessTriple,
	accessAllowed,
	bindServiceAccount as bindAccount,
} from './service-account.js'

const replicas = 2
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-rbac',
	refillPoolAfterEach: true,
})
const open = h.open

type Triple = AccessTriple

/** ServiceAccount + Role (`rules`, call sites stripped) + RoleBinding; a token for the account. */
function bindServiceAccount(name: string, rules: readonly KubernetesRbacRule[]): Promise<string> {
	return bindAccount(h.cluster.api, h.namespace, name, rules)
}

/** What the API server's authorizer answers for `token` (SelfSubjectAccessReview). */
function allowed(token: string, triple: Triple): Promise<boolean> {
	return accessAllowed(h.cluster.access, token, h.namespace, triple)
}

function configWithToken(
	token: string,
	overrides: Partial<KubernetesBackendConfig> = {},
): KubernetesBackendConfig {
	return h.config({ access: backendAccess({ ...h.cluster.access, token }), ...overrides })
}

function shutdownMs(claim: KubeObject): number {
	const lifecycle = claim.spec?.lifecycle as { shutdownTime?: unknown } | undefined
	return typeof lifecycle?.shutdownTime === 'string'
		? Date.parse(lifecycle.shutdownTime)
		: Number.NaN
}

const EXTENSIONS = 'extensions.agents.x-k8s.io'
const WITHHELD: readonly Triple[] = [
	...['create', 'update', 'patch', 'delete'].map((verb) => ({
		group: 'agents.x-k8s.io',
		resource: 'sandboxes',
		verb,
	})),
	...['create', 'update', 'patch', 'delete'].flatMap((verb) => [
		{ group: 'networking.k8s.io', resource: 'networkpolicies', verb },
		{ group: 'cilium.io', resource: 'ciliumnetworkpolicies', verb },
	]),
	...['get', 'list'].flatMap((verb) => [
		{ group: EXTENSIONS, resource: 'sandboxtemplates', verb },
		{ group: '', resource: 'persistentvolumeclaims', verb },
	]),
	{ group: EXTENSIONS, resource: 'sandboxclaims', verb: 'update' },
	{ group: EXTENSIONS, resource: 'sandboxwarmpools', verb: 'list' },
	{ group: EXTENSIONS, resource: 'sandboxwarmpools', verb: 'patch' },
	{ group: '', resource: 'pods', verb: 'create' },
	{ group: '', resource: 'pods', verb: 'delete' },
	{ group: '', resource: 'pods', verb: 'get', subresource: 'log' },
	{ group: '', resource: 'pods', verb: 'create', subresource: 'exec' },
]

describe('the claimant rules on a real API server', () => {
	it('a ServiceAccount bound to exactly these rules may issue every listed verb and none of the withheld ones', async () => {
		const token = await bindServiceAccount('claimant-review', KUBERNETES_CLAIMANT_RBAC_RULES)
		const granted: Triple[] = KUBERNETES_CLAIMANT_RBAC_RULES.flatMap((rule) =>
			rule.apiGroups.flatMap((group) =>
				rule.resources.flatMap((resource) => rule.verbs.map((verb) => ({ group, resource, verb }))),
			),
		)
		expect(granted.length).toBeGreaterThan(10)
		for (const triple of granted) {
			expect(await allowed(token, triple), `${JSON.stringify(triple)} allowed`).toBe(true)
		}
		for (const triple of WITHHELD) {
			expect(await allowed(token, triple), `${JSON.stringify(triple)} denied`).toBe(false)
		}
	})

	it('a pool-only host holding only the claimant rules claims, holds and renews, enumerates and releases warm sandboxes', async () => {
		const token = await bindServiceAccount('claimant-host', KUBERNETES_CLAIMANT_RBAC_RULES)
		const leaseErrors: Error[] = []
		const config = configWithToken(token, {
			claimTtlSeconds: 6,
			claimLabels: { 'namzu.test/host': 'claimant' },
			onLeaseRenewalError: (error) => leaseErrors.push(error),
		})
		const sandbox = await h.provider(config).create()
		open.push(sandbox)
		expect(await sandbox.exec('echo', ['claimed'])).toMatchObject({
			exitCode: 0,
			stdout: 'claimed\n',
		})

		const [claim] = await listClaims(h.cluster, h.namespace)
		if (claim === undefined) throw new Error('no claim')
		const claimPath = paths.claim(h.namespace, claim.metadata.name)
		const first = shutdownMs(claim)
		await waitFor(
			'the lease PATCH moving shutdownTime forward',
			async () => {
				const now = shutdownMs(await h.cluster.api.get<KubeObject>(claimPath))
				return now > first ? now : undefined
			},
			{ timeoutMs: 15_000, intervalMs: 100 },
		)
		expect(leaseErrors).toEqual([])

		const capacity = await readKubernetesTaskCapacity(config)
		expect(capacity.activeClaims).toBe(1)
		expect(capacity.warmPool.desired).toBe(replicas)

		const released = await releaseKubernetesTaskSandboxes(config, {
			labelSelector: 'namzu.test/host=claimant',
		})
		expect(released).toEqual({ deleted: 1, names: [claim.metadata.name] })
		await sandbox.destroy()
		expect(leaseErrors).toEqual([])
	})

	it('without list on sandboxclaims, create() still succeeds and only the two fleet verbs get a 403', async () => {
		const withoutList = KUBERNETES_CLAIMANT_RBAC_RULES.map((rule) =>
			rule.resources.includes('sandboxclaims')
				? { ...rule, verbs: rule.verbs.filter((verb) => verb !== 'list') }
				: rule,
		)
		const token = await bindServiceAccount('claimant-nolist', withoutList)
		const config = configWithToken(token)
		const sandbox = await h.provider(config).create()
		open.push(sandbox)
		expect(await sandbox.exec('true')).toMatchObject({ exitCode: 0 })

		const release = await rejection(
			releaseKubernetesTaskSandboxes(config, { labelSelector: 'namzu.test/host=nobody' }),
		)
		expect(release.error).toMatchObject({ status: 403, verb: 'GET' })
		const capacity = await rejection(readKubernetesTaskCapacity(config))
		expect(capacity.error).toMatchObject({ status: 403 })
		await sandbox.destroy()
	})
})
