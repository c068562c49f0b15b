/**
 * The manifests an operator applies (deploy/k8s/manifests/): each read as YAML and held to what the
 * backend checks and needs — the templates' security contexts, grace periods and env, the egress
 * objects equal to the backend's own deny-all translation, the agent port closed by the ingress
 * policy as the backend's own coverage decision reads it, and the Roles' verbs. Applying them to a
 * real API server and running the backend under their Roles is manifests.cluster.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadAgentConfig } from '../../src/agent/handler/config.js'
import { loadSessionConfig } from '../../src/agent/sessions/session-config.js'
import { DEFAULT_KUBERNETES_AGENT_PORT } from '../../src/backends/kubernetes/kubernetes-backend-config.js'
import { ADMISSION_FENCE_NAME } from '../../src/backends/kubernetes/network/admission-fence.js'
import { resolveEgressConfig } from '../../src/backends/kubernetes/network/egress-config.js'
import { translateEgressPolicy } from '../../src/backends/kubernetes/network/egress-translation.js'
import { decideIngressCoverage } from '../../src/backends/kubernetes/network/ingress-coverage.js'
import { readNetworkPolicy } from '../../src/backends/kubernetes/network/policy-model.js'
import {
	DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY,
	KUBERNETES_CLAIMANT_RBAC_RULES,
} from '../../src/index.js'
import {
	MANIFEST_DIR,
	manifestObjects,
	MANIFEST_NAMESPACE as NAMESPACE,
	type ManifestObject as Obj,
} from './manifest-files.js'

function one(file: string, kind: string, name?: string): Obj {
	const found = manifestObjects(file).filter(
		(o) => o.kind === kind && (name === undefined || o.metadata.name === name),
	)
	if (found.length !== 1) throw new Error(`${file}: ${found.length} ${kind} ${name ?? ''}`)
	return found[0] as Obj
}

// biome-ignore lint/suspicious/noExplicitAny: walking parsed YAML in assertions
type Any = any

function container(template: Obj): Any {
	return (template as Any).spec.podTemplate.spec.containers[0]
}

function env(template: Obj): Record<string, unknown> {
	return Object.fromEntries(
		(container(template).env as Any[]).map((e) => [e.name, e.value ?? e.valueFrom]),
	)
}

const CLUSTER_SCOPED = [
	'RuntimeClass',
	'ClusterRole',
	'ClusterRoleBinding',
	'ValidatingAdmissionPolicy',
	'ValidatingAdmissionPolicyBinding',
]

const task = () => one('sandboxtemplate-task.yaml', 'SandboxTemplate')
const workspace = () => one('sandboxtemplate-workspace.yaml', 'SandboxTemplate')

/** Opt-in (egress.perSandbox): applied on their own, never by `kubectl apply -k`. */
const OPT_IN = ['rbac-per-sandbox-egress.yaml', 'validatingadmissionpolicy-cilium.yaml']

/** Every manifest file, without the kustomization that lists the default ones. */
const allManifestFiles = () =>
	readdirSync(MANIFEST_DIR)
		.filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
		.sort()

/** The manifest files the kustomization applies: all but the opt-in ones. */
const manifestFiles = () => allManifestFiles().filter((f) => !OPT_IN.includes(f))

describe('deploy/k8s/manifests', () => {
	it('kustomization.yaml lists every manifest file, in the README apply order', () => {
		const [kustomization] = manifestObjects('kustomization.yaml') as unknown as [
			{ resources: string[] },
		]
		expect([...kustomization.resources].sort()).toEqual(manifestFiles())
		const readme = readFileSync(join(MANIFEST_DIR, '..', 'README.md'), 'utf8')
		const positions = kustomization.resources.map((file) => readme.indexOf(file))
		expect(positions.every((at) => at >= 0)).toBe(true)
		expect([...positions].sort((a, b) => a - b)).toEqual(positions)
	})

	it('every file parses, and every namespaced object lives in the one sandbox namespace', () => {
		const files = allManifestFiles()
		expect(files).toEqual(
			[
				'networkpolicy.yaml',
				'rbac-claimant.yaml',
				'rbac-per-sandbox-egress.yaml',
				'rbac.yaml',
				'runtimeclass.yaml',
				'sandboxtemplate-task.yaml',
				'sandboxtemplate-workspace.yaml',
				'sandboxwarmpool.yaml',
				'validatingadmissionpolicy-cilium.yaml',
			].sort(),
		)
		for (const file of files) {
			for (const object of manifestObjects(file)) {
				if (CLUSTER_SCOPED.includes(object.kind)) expect(object.metadata.namespace).toBeUndefined()
				else expect(object.metadata.namespace, `${file} ${object.kind}`).toBe(NAMESPACE)
			}
		}
	})

	it('the templates run the guest image under the RuntimeClass, labelled by their own name, with the pod uid as bind token on the default agent port', () => {
		const runtimeClass = one('runtimeclass.yaml', 'RuntimeClass')
		expect(runtimeClass).toMatchObject({ handler: 'kata' })
		for (const template of [task(), workspace()]) {
			const pod = (template as Any).spec.podTemplate
			expect(pod.metadata.labels['sandbox.namzu.ai/template']).toBe(template.metadata.name)
			expect(pod.spec.runtimeClassName).toBe(runtimeClass.metadata.name)
			expect(env(template)).toMatchObject({
				NAMZU_AGENT_TCP_PORT: String(DEFAULT_KUBERNETES_AGENT_PORT),
				NAMZU_AGENT_BIND_TOKEN: { fieldRef: { fieldPath: 'metadata.uid' } },
			})
			expect(container(template).ports).toEqual([
				{ name: 'agent', containerPort: DEFAULT_KUBERNETES_AGENT_PORT, protocol: 'TCP' },
			])
		}
	})

	it('the task template is restricted: not privileged, uid/gid 1001, no escalation, no capability, RuntimeDefault seccomp', () => {
		expect(container(task()).securityContext).toEqual({
			privileged: false,
			runAsUser: 1001,
			runAsGroup: 1001,
			runAsNonRoot: true,
			allowPrivilegeEscalation: false,
			capabilities: { drop: ['ALL'] },
			seccompProfile: { type: 'RuntimeDefault' },
		})
	})

	it('the task template keeps a 5 s grace period with a 3000 ms agent drain and no preStop hook', () => {
		expect((task() as Any).spec.podTemplate.spec.terminationGracePeriodSeconds).toBe(5)
		expect(env(task()).NAMZU_AGENT_SHUTDOWN_DEADLINE_MS).toBe('3000')
		expect(container(task()).lifecycle).toBeUndefined()
		expect((task() as Any).spec.volumeClaimTemplates).toBeUndefined()
	})

	it('the workspace template runs privileged for its device branch, with a 30 s grace period and the prestop hook', () => {
		const spec = (workspace() as Any).spec
		expect(container(workspace()).securityContext).toEqual({ privileged: true })
		expect(spec.podTemplate.spec.terminationGracePeriodSeconds).toBe(30)
		expect(container(workspace()).lifecycle).toEqual({
			preStop: { exec: { command: ['/entrypoint.sh', 'prestop'] } },
		})
	})

	it('the workspace disk is Block, consumed through volumeDevices at the device the entrypoint mounts', () => {
		const spec = (workspace() as Any).spec
		const claims = spec.volumeClaimTemplates as Any[]
		expect(claims.length).toBeGreaterThan(0)
		for (const claim of claims) expect(claim.spec.volumeMode).toBe('Block')
		const devices = container(workspace()).volumeDevices as Any[]
		expect(devices.map((d) => d.name).sort()).toEqual(claims.map((c) => c.metadata.name).sort())
		expect(container(workspace()).volumeMounts).toBeUndefined()
		expect(devices.map((d) => d.devicePath)).toContain(env(workspace()).NAMZU_WORKSPACE_DEVICE)
	})

	it("the workspace template lists the session and execution-retention env at exactly the agent's defaults", () => {
		const template = one('sandboxtemplate-workspace.yaml', 'SandboxTemplate') as Any
		const env = Object.fromEntries(
			(template.spec.podTemplate.spec.containers[0].env as Any[])
				.filter((entry) => entry.value !== undefined)
				.map((entry) => [entry.name, entry.value]),
		)
		const listed = [
			'NAMZU_AGENT_MAX_SESSIONS',
			'NAMZU_AGENT_SESSION_LOG_BYTES',
			'NAMZU_AGENT_SESSION_TERMINAL_TTL_MS',
			'NAMZU_SANDBOX_MAX_TIMEOUT_MS',
			'NAMZU_AGENT_EXECUTION_LOG_BYTES',
			'NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS',
			'NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS',
		]
		const picked = Object.fromEntries(listed.map((name) => [name, env[name]]))
		// Read with the template's values and with none: the agent must configure itself the same.
		const listen = { NAMZU_AGENT_UNIX_PATH: '/run/agent.sock' }
		expect(loadSessionConfig(picked)).toEqual(loadSessionConfig({}))
		expect(loadAgentConfig({ ...listen, ...picked })).toEqual(loadAgentConfig(listen))
		for (const name of listed) expect(picked[name], name).toMatch(/^\d+$/)
	})

	it('egress-check says, in its header and in the README, that it does not probe the hostname allowlist', () => {
		const script = readFileSync(join(MANIFEST_DIR, '..', 'scripts', 'egress-check.mjs'), 'utf8')
		const readme = readFileSync(join(MANIFEST_DIR, '..', 'README.md'), 'utf8')
		expect(script.split('\nimport')[0]).toContain('does not probe the hostname allowlist')
		const section = readme.slice(readme.indexOf('egress-check.mjs'))
		expect(section.slice(0, 1200)).toContain('does not probe the hostname allowlist')
	})

	it('the warm pool builds from the task template', () => {
		expect((one('sandboxwarmpool.yaml', 'SandboxWarmPool') as Any).spec.sandboxTemplateRef).toEqual(
			{
				name: task().metadata.name,
			},
		)
	})

	it.each(['namzu-sandbox-task', 'namzu-sandbox-workspace'])(
		'%s-egress is exactly the backend translation of deny-all for that template',
		(template) => {
			const resolved = resolveEgressConfig(
				{ policy: { kind: 'deny-all' } },
				{ namespace: NAMESPACE, sandboxTemplateName: template },
			)
			if (!resolved) throw new Error('no egress config')
			const translated = translateEgressPolicy(resolved, template)
			const applied = one('networkpolicy.yaml', 'NetworkPolicy', translated.name) as Any
			expect(applied.apiVersion).toBe(translated.apiVersion)
			expect(applied.spec).toEqual(translated.spec)
		},
	)

	it('the ingress policy closes the agent port of every template pod, as the backend decides it', () => {
		const policies = manifestObjects('networkpolicy.yaml').map((object) =>
			readNetworkPolicy({ ...object, metadata: { ...object.metadata } }),
		)
		for (const template of [task(), workspace()]) {
			const labels = (template as Any).spec.podTemplate.metadata.labels
			const decision = decideIngressCoverage({
				policies,
				podLabels: labels,
				namespace: NAMESPACE,
				agentPort: DEFAULT_KUBERNETES_AGENT_PORT,
				unread: [],
			})
			expect(decision.pass, template.metadata.name).toBe(true)
		}
	})

	it('the port-53 rule of each egress policy says to delete it under ciliumNarrowing.dnsNames', () => {
		const text = readFileSync(join(MANIFEST_DIR, 'networkpolicy.yaml'), 'utf8')
		const egressPolicies = text.split('\n---\n').filter((doc) => /name: \S+-egress\n/.test(doc))
		expect(egressPolicies).toHaveLength(2)
		for (const doc of egressPolicies)
			expect(doc).toMatch(/ciliumNarrowing\.dnsNames set, delete this plain port-53 rule/)
	})

	it('rbac-claimant.yaml is a ServiceAccount, Role and RoleBinding named namzu-sandbox-claimant whose rules are KUBERNETES_CLAIMANT_RBAC_RULES', () => {
		const objects = manifestObjects('rbac-claimant.yaml')
		expect(objects.map((o) => [o.kind, o.metadata.name])).toEqual([
			['ServiceAccount', 'namzu-sandbox-claimant'],
			['Role', 'namzu-sandbox-claimant'],
			['RoleBinding', 'namzu-sandbox-claimant'],
		])
		expect((objects[1] as Any).rules).toEqual(
			KUBERNETES_CLAIMANT_RBAC_RULES.map(({ apiGroups, resources, verbs }) => ({
				apiGroups: [...apiGroups],
				resources: [...resources],
				verbs: [...verbs],
			})),
		)
		const header = readFileSync(join(MANIFEST_DIR, 'rbac-claimant.yaml'), 'utf8').split(
			'apiVersion',
		)[0]
		expect(header).toContain('Not measured on a real cluster')
		expect(header).toContain('conformance suite')
		expect(header).toContain('kubectl auth can-i create sandboxes')
	})

	it.each([
		['networking.k8s.io', 'networkpolicies', 'list'],
		['networking.k8s.io', 'networkpolicies', 'get'],
		['cilium.io', 'ciliumnetworkpolicies', 'get'],
		['cilium.io', 'ciliumnetworkpolicies', 'list'],
		['', 'persistentvolumeclaims', 'get'],
		['extensions.agents.x-k8s.io', 'sandboxclaims', 'list'],
		['extensions.agents.x-k8s.io', 'sandboxclaims', 'patch'],
		['extensions.agents.x-k8s.io', 'sandboxwarmpools', 'get'],
		['agents.x-k8s.io', 'sandboxes', 'list'],
		['agents.x-k8s.io', 'sandboxes', 'patch'],
	])('rbac.yaml grants %s %s %s', (group, resource, verb) => {
		const rules = (one('rbac.yaml', 'Role') as Any).rules as Any[]
		expect(
			rules.some(
				(r) =>
					r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb),
			),
		).toBe(true)
	})

	it('R15-e2024bc-08: rbac.yaml grants no policy-write verb', () => {
		const rules = (one('rbac.yaml', 'Role') as Any).rules as Any[]
		const writes = rules.filter(
			(r) =>
				(r.resources.includes('ciliumnetworkpolicies') ||
					r.resources.includes('networkpolicies')) &&
				r.verbs.some((v: string) => ['create', 'update', 'patch', 'delete', '*'].includes(v)),
		)
		expect(writes).toEqual([])
	})

	it('R15-e2024bc-32: rbac-per-sandbox-egress.yaml is a Role with the policy-write verbs and a ClusterRole reading the two admission objects by name, each bound to the host', () => {
		const role = one('rbac-per-sandbox-egress.yaml', 'Role') as Any
		expect(role.rules).toEqual([
			{
				apiGroups: ['cilium.io'],
				resources: ['ciliumnetworkpolicies'],
				verbs: ['create', 'patch', 'delete'],
			},
		])
		const clusterRole = one('rbac-per-sandbox-egress.yaml', 'ClusterRole') as Any
		expect(clusterRole.rules).toEqual([
			{
				apiGroups: ['admissionregistration.k8s.io'],
				resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
				resourceNames: [ADMISSION_FENCE_NAME],
				verbs: ['get'],
			},
		])
		const host = one('rbac.yaml', 'ServiceAccount')
		for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
			const binding = one('rbac-per-sandbox-egress.yaml', kind) as Any
			expect(binding.subjects).toEqual([
				{ kind: 'ServiceAccount', name: host.metadata.name, namespace: NAMESPACE },
			])
			expect(binding.roleRef.name).toBe(
				one('rbac-per-sandbox-egress.yaml', kind.replace('Binding', '')).metadata.name,
			)
		}
	})

	it('R15-e2024bc-05/28: the admission fence is named as the backend reads it, fences the host identity and pins the default per-sandbox label key', () => {
		const policy = one('validatingadmissionpolicy-cilium.yaml', 'ValidatingAdmissionPolicy') as Any
		const binding = one(
			'validatingadmissionpolicy-cilium.yaml',
			'ValidatingAdmissionPolicyBinding',
		) as Any
		expect(policy.metadata.name).toBe(ADMISSION_FENCE_NAME)
		expect(binding.metadata.name).toBe(ADMISSION_FENCE_NAME)
		expect(binding.spec).toMatchObject({
			policyName: ADMISSION_FENCE_NAME,
			validationActions: ['Deny'],
		})
		expect(binding.spec.matchResources.namespaceSelector.matchLabels).toEqual({
			'kubernetes.io/metadata.name': NAMESPACE,
		})
		const host = one('rbac.yaml', 'ServiceAccount')
		expect(policy.spec.matchConditions[0].expression).toContain(
			`'system:serviceaccount:${NAMESPACE}:${host.metadata.name}'`,
		)
		const labelKey = (policy.spec.variables as Any[]).find((v) => v.name === 'labelKey')
		expect(labelKey.expression).toBe(`'${DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY}'`)
		expect(policy.spec.matchConstraints.resourceRules[0]).toMatchObject({
			apiGroups: ['cilium.io'],
			operations: ['CREATE', 'UPDATE', 'DELETE'],
			resources: ['ciliumnetworkpolicies'],
		})
	})
})
