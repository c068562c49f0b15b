// Manifests the cluster tests create — SandboxTemplate, SandboxWarmPool, SandboxClaim (agent-sandbox
// v1beta1) — with a pod template the process kubelet runs as our guest agent: TCP listener, the
// pod uid as bind token through the downward API, a non-root, no-privilege securityContext and a
// `workspace` volume claim (a filesystem claim mounted at /workspace, or a block claim the container
// consumes as the device /dev/workspace). Pure builders plus the API paths of each kind.

export const sandboxGroup = 'agents.x-k8s.io/v1beta1'
export const extensionsGroup = 'extensions.agents.x-k8s.io/v1beta1'
export const agentPort = 7070

export const paths = {
	namespaces: '/api/v1/namespaces',
	namespace: (ns: string) => `/api/v1/namespaces/${ns}`,
	pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
	pod: (ns: string, name: string) => `/api/v1/namespaces/${ns}/pods/${name}`,
	services: (ns: string) => `/api/v1/namespaces/${ns}/services`,
	service: (ns: string, name: string) => `/api/v1/namespaces/${ns}/services/${name}`,
	pvcs: (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
	pvc: (ns: string, name: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims/${name}`,
	serviceAccount: (ns: string, name: string) => `/api/v1/namespaces/${ns}/serviceaccounts/${name}`,
	sandboxes: (ns: string) => `/apis/${sandboxGroup}/namespaces/${ns}/sandboxes`,
	sandbox: (ns: string, name: string) => `/apis/${sandboxGroup}/namespaces/${ns}/sandboxes/${name}`,
	templates: (ns: string) => `/apis/${extensionsGroup}/namespaces/${ns}/sandboxtemplates`,
	pools: (ns: string) => `/apis/${extensionsGroup}/namespaces/${ns}/sandboxwarmpools`,
	pool: (ns: string, name: string) =>
		`/apis/${extensionsGroup}/namespaces/${ns}/sandboxwarmpools/${name}`,
	claims: (ns: string) => `/apis/${extensionsGroup}/namespaces/${ns}/sandboxclaims`,
	claim: (ns: string, name: string) =>
		`/apis/${extensionsGroup}/namespaces/${ns}/sandboxclaims/${name}`,
	networkPolicies: (ns: string) => `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
	networkPolicy: (ns: string, name: string) =>
		`/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/${name}`,
	roles: (ns: string) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
	roleBindings: (ns: string) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
	serviceAccounts: (ns: string) => `/api/v1/namespaces/${ns}/serviceaccounts`,
}

/**
 * The agent-port ingress policy a deployment applies (k8s/manifests/networkpolicy.yaml's shape):
 * pods carrying the template label (of `template`, or of any template) accept the agent port only
 * from `hostCidr` (the host that dials them — here the harness bridge's own address).
 */
export function agentIngressPolicy(
	name: string,
	template: string | undefined,
	hostCidr: string,
): Record<string, unknown> {
	const key = 'sandbox.namzu.ai/template'
	return {
		apiVersion: 'networking.k8s.io/v1',
		kind: 'NetworkPolicy',
		metadata: { name },
		spec: {
			podSelector:
				template === undefined
					? { matchExpressions: [{ key, operator: 'Exists' }] }
					: { matchLabels: { [key]: template } },
			policyTypes: ['Ingress'],
			ingress: [
				{
					from: [{ ipBlock: { cidr: hostCidr } }],
					ports: [{ protocol: 'TCP', port: agentPort }],
				},
			],
		},
	}
}

export interface AgentPodOptions {
	/** Extra container env (e.g. agent lifecycle settings). */
	readonly env?: Readonly<Record<string, string>>
	readonly terminationGracePeriodSeconds?: number
	/**
	 * Adds a `workspace` volume claim template (default true): `true` a filesystem claim mounted at
	 * /workspace; `'block'` a `volumeMode: Block` claim the container consumes through
	 * `volumeDevices` at {@link workspaceDevicePath} (the process kubelet mounts its filesystem at
	 * the container's `NAMZU_SANDBOX_WORKSPACE`, standing in for the image's entrypoint).
	 */
	readonly workspace?: WorkspaceOption
}

export type WorkspaceOption = boolean | 'block'

/** Where a block workspace claim's device appears in the container. */
export const workspaceDevicePath = '/dev/workspace'

/** The workspace claim's size when it is a block device. */
export const blockWorkspaceStorage = '256Mi'

function workspaceVolumeUse(workspace: WorkspaceOption): Record<string, unknown> {
	if (workspace === 'block') {
		return { volumeDevices: [{ name: 'workspace', devicePath: workspaceDevicePath }] }
	}
	return workspace ? { volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }] } : {}
}

export function agentPodSpec(options: AgentPodOptions = {}): Record<string, unknown> {
	const workspace = options.workspace ?? true
	return {
		terminationGracePeriodSeconds: options.terminationGracePeriodSeconds ?? 5,
		automountServiceAccountToken: false,
		containers: [
			{
				name: 'agent',
				image: 'namzu.local/sandbox-agent:test',
				ports: [{ name: 'agent', containerPort: agentPort, protocol: 'TCP' }],
				env: [
					{ name: 'NAMZU_AGENT_TCP_PORT', value: String(agentPort) },
					{
						name: 'NAMZU_AGENT_BIND_TOKEN',
						valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } },
					},
					{ name: 'NAMZU_SANDBOX_WORKSPACE', value: '/workspace' },
					...Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value })),
				],
				securityContext: {
					runAsNonRoot: true,
					runAsUser: 1000,
					runAsGroup: 1000,
					allowPrivilegeEscalation: false,
					capabilities: { drop: ['ALL'] },
				},
				...workspaceVolumeUse(workspace),
			},
		],
	}
}

export function workspaceClaimTemplates(
	mode: 'Filesystem' | 'Block' = 'Filesystem',
): Record<string, unknown>[] {
	if (mode === 'Block') {
		return [
			{
				metadata: { name: 'workspace' },
				spec: {
					accessModes: ['ReadWriteOnce'],
					volumeMode: 'Block',
					resources: { requests: { storage: blockWorkspaceStorage } },
				},
			},
		]
	}
	return [
		{
			metadata: { name: 'workspace' },
			spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
		},
	]
}

/** The `volumeClaimTemplates` field a workspace option adds to a template or Sandbox spec. */
function claimTemplatesFor(workspace: WorkspaceOption | undefined): Record<string, unknown> {
	const value = workspace ?? true
	if (value === false) return {}
	return {
		volumeClaimTemplates: workspaceClaimTemplates(value === 'block' ? 'Block' : 'Filesystem'),
	}
}

export function sandboxTemplate(
	name: string,
	options: AgentPodOptions = {},
): Record<string, unknown> {
	return {
		apiVersion: extensionsGroup,
		kind: 'SandboxTemplate',
		metadata: { name },
		spec: {
			podTemplate: {
				metadata: { labels: { 'sandbox.namzu.ai/template': name } },
				spec: agentPodSpec(options),
			},
			...claimTemplatesFor(options.workspace),
			service: true,
			// No controller-managed policy (the tests apply their own); Unmanaged also keeps the DNS
			// override away.
			networkPolicyManagement: 'Unmanaged',
		},
	}
}

export function warmPool(
	name: string,
	template: string,
	replicas: number,
): Record<string, unknown> {
	return {
		apiVersion: extensionsGroup,
		kind: 'SandboxWarmPool',
		metadata: { name },
		spec: { replicas, sandboxTemplateRef: { name: template } },
	}
}

export function sandboxClaim(name: string, pool: string): Record<string, unknown> {
	return {
		apiVersion: extensionsGroup,
		kind: 'SandboxClaim',
		metadata: { name },
		spec: { warmPoolRef: { name: pool } },
	}
}

/** A Sandbox created directly (no claim, no pool). */
export function directSandbox(
	name: string,
	options: AgentPodOptions = {},
): Record<string, unknown> {
	return {
		apiVersion: sandboxGroup,
		kind: 'Sandbox',
		metadata: { name },
		spec: {
			podTemplate: { spec: agentPodSpec(options) },
			...claimTemplatesFor(options.workspace),
		},
	}
}
