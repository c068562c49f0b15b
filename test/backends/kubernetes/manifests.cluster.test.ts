/**
 * The shipped manifests (deploy/k8s/manifests/) against a real API server with the real
 * agent-sandbox controller: every object applies as written (only the namespace, the warm pool's
 * size and the ingress rule's `from` edited, as an operator does), and the backend runs under
 * exactly the shipped Roles — a direct task sandbox from the shipped template with deny-all egress
 * verified against the shipped policy under rbac.yaml, a pooled one under rbac-claimant.yaml,
 * which may not create a Sandbox, and a workspace from the shipped workspace template, privileged,
 * whose disk its entrypoint formats and mounts.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import {
	createKubernetesSandboxProvider,
	createKubernetesWorkspace,
	type KubernetesBackendConfig,
	RemoteCancellationUnknownError,
} from '../../../src/index.js'
import { DEFAULT_KUBERNETES_AGENT_PORT } from '../../../src/kubernetes-entry.js'
import { waitGone } from '../../cluster/cluster-objects.js'
import { builtGuestRootfs } from '../../cluster/kubelet/guest-image.js'
import { binDir } from '../../cluster/paths.js'
import { paths, sandboxTemplate } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { manifestObjects } from '../../deploy/manifest-files.js'
import { backendAccess, useKubernetesHarness } from './kubernetes-harness.js'
import { accessAllowed, serviceAccountToken } from './service-account.js'

/** The node version the guest image was built with (its build record). */
function imageNodeVersion(): string {
	const rootfs = builtGuestRootfs()
	if (rootfs === undefined) throw new Error('the guest image is not built: npm run image:build')
	const info = JSON.parse(readFileSync(join(dirname(rootfs), 'build-info.json'), 'utf8')) as {
		node?: string
	}
	return `v${info.node ?? '?'}`
}

const KIND_OVERLAY = join(
	import.meta.dirname,
	'..',
	'..',
	'..',
	'deploy',
	'k8s',
	'overlays',
	'kind',
)

const h = useKubernetesHarness({ namespacePrefix: 'k8s-manifests', withoutIngressPolicy: true })

// biome-ignore lint/suspicious/noExplicitAny: editing parsed YAML as an operator would
type Any = any

const FILES = [
	'runtimeclass.yaml',
	'rbac.yaml',
	'rbac-claimant.yaml',
	'networkpolicy.yaml',
	'sandboxtemplate-task.yaml',
	'sandboxtemplate-workspace.yaml',
	'sandboxwarmpool.yaml',
]

function collection(object: Any, ns: string): string {
	switch (object.kind) {
		case 'RuntimeClass':
			return '/apis/node.k8s.io/v1/runtimeclasses'
		case 'ServiceAccount':
			return paths.serviceAccounts(ns)
		case 'Role':
			return paths.roles(ns)
		case 'RoleBinding':
			return paths.roleBindings(ns)
		case 'NetworkPolicy':
			return paths.networkPolicies(ns)
		case 'SandboxTemplate':
			return paths.templates(ns)
		case 'SandboxWarmPool':
			return paths.pools(ns)
		default:
			throw new Error(`no collection for ${object.kind}`)
	}
}

/** The operator's edits: the namespace, one warm sandbox, the host's own address on the agent port. */
function edited(object: Any, ns: string, hostCidr: string): Any {
	const copy = structuredClone(object)
	if (copy.metadata.namespace !== undefined) copy.metadata.namespace = ns
	for (const subject of copy.subjects ?? []) subject.namespace = ns
	if (copy.kind === 'SandboxWarmPool') copy.spec.replicas = 1
	if (copy.kind === 'NetworkPolicy' && copy.spec.ingress) {
		for (const rule of copy.spec.ingress) rule.from = [{ ipBlock: { cidr: hostCidr } }]
	}
	return copy
}

function tokenFor(account: string): Promise<string> {
	return serviceAccountToken(h.cluster.api, h.namespace, account)
}

/** The harness config acting as `token`, on the shipped task template and its agent port. */
function configAs(
	token: string,
	overrides: Partial<KubernetesBackendConfig>,
): KubernetesBackendConfig {
	return h.config({
		access: backendAccess({ ...h.cluster.access, token }),
		sandboxTemplateName: 'namzu-sandbox-task',
		agentPort: DEFAULT_KUBERNETES_AGENT_PORT,
		readyTimeoutMs: 60_000,
		...overrides,
	})
}

describe('the shipped manifests on a real API server', () => {
	it('every manifest applies as written, and reads back', async () => {
		const hostCidr = `${h.cluster.kubelet.network.gateway}/32`
		for (const file of FILES) {
			for (const object of manifestObjects(file)) {
				const body = edited(object, h.namespace, hostCidr)
				await h.cluster.api.create(collection(body, h.namespace), body)
				const back = await h.cluster.api.find(
					`${collection(body, h.namespace)}/${body.metadata.name}`,
				)
				expect(back, `${file} ${body.kind} ${body.metadata.name}`).toBeDefined()
			}
		}
	})

	it("runs a direct task sandbox from the shipped template under rbac.yaml's Role, deny-all egress verified against networkpolicy.yaml", async () => {
		const provider = createKubernetesSandboxProvider(
			configAs(await tokenFor('namzu-sandbox'), { egress: { policy: { kind: 'deny-all' } } }),
		)
		try {
			const sandbox = await provider.create()
			try {
				const result = await sandbox.exec('sh', [
					'-c',
					'id -u; echo "$NAMZU_AGENT_SHUTDOWN_DEADLINE_MS"',
				])
				expect(result).toMatchObject({ exitCode: 0, stdout: '1001\n\n' })
			} finally {
				await sandbox.destroy()
			}
		} finally {
			await provider.close()
		}
	})

	it("the shipped task template runs the built guest image: its entrypoint, tini as pid 1 reaping a cancelled command's background job, the image user and node, no uid 0 and no capability anywhere", async () => {
		const provider = createKubernetesSandboxProvider(
			configAs(await tokenFor('namzu-sandbox'), { egress: { policy: { kind: 'deny-all' } } }),
		)
		try {
			const sandbox = await provider.create()
			try {
				const result = await sandbox.exec('sh', [
					'-c',
					'id -un; cat /proc/1/comm; node --version; echo "$HOME"; grep NoNewPrivs /proc/self/status',
				])
				// The image's node (22, from its build), not this host's (the harness runs Node 20), and
				// the entrypoint's HOME fallback: the kubelet keeps every image read-only.
				expect(result).toMatchObject({ exitCode: 0 })
				expect(result.stdout).toBe(
					`namzu\ntini\n${imageNodeVersion()}\n/tmp/namzu-home-1001\nNoNewPrivs:\t1\n`,
				)
				expect(imageNodeVersion()).not.toBe(process.version)

				// Never root, never a capability, pid 1 included.
				const ids = await sandbox.exec('sh', [
					'-c',
					"grep -hE '^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/1/status /proc/self/status",
				])
				const fields = ids.stdout.trim().split('\n')
				expect(fields).toHaveLength(14)
				for (const line of fields) {
					const [name, value] = line.split(':\t')
					if (name === 'Uid' || name === 'Gid') expect(value).toBe('1001\t1001\t1001\t1001')
					else expect(value, line).toBe('0000000000000000')
				}

				// A cancelled sh -c leaves a background job; tini (pid 1, the subreaper) reaps it, so
				// the cancellation is confirmed instead of timing out on a zombie.
				const controller = new AbortController()
				let started = false
				const run = sandbox
					.exec('sh', ['-c', 'sleep 300 & echo started; sleep 300'], {
						signal: controller.signal,
						onOutput: (chunk) => {
							if (chunk.data.includes('started')) started = true
						},
					})
					.then(
						(value) => ({ value }),
						(error: unknown) => ({ error }),
					)
				await waitFor('the command to start', async () => (started ? true : undefined), {
					timeoutMs: 10_000,
					intervalMs: 20,
				})
				controller.abort()
				const outcome = await run
				expect(outcome).not.toHaveProperty('value.exitCode', 0)
				if ('error' in outcome) {
					expect(outcome.error).not.toBeInstanceOf(RemoteCancellationUnknownError)
				}
				await waitFor(
					'no sleep left, zombie or not',
					async () => {
						const left = await sandbox.exec('sh', [
							'-c',
							'ps -eo stat=,comm= | grep -c sleep || true',
						])
						return left.stdout.trim() === '0' ? true : undefined
					},
					{ timeoutMs: 10_000, intervalMs: 100 },
				)
			} finally {
				await sandbox.destroy()
			}
		} finally {
			await provider.close()
		}
	})

	it('the kind overlay builds with kubectl kustomize: the shipped objects minus the RuntimeClass and the workspace template, the task template unprivileged and restricted without a RuntimeClass', () => {
		const built = execFileSync(join(binDir(), 'kubectl'), ['kustomize', KIND_OVERLAY], {
			encoding: 'utf8',
		})
		const objects = parseAllDocuments(built).map((doc) => doc.toJS() as Any)
		const key = (o: Any) => `${o.kind}/${o.metadata.name}`
		const shipped = FILES.flatMap((file) => manifestObjects(file)) as Any[]
		expect(objects.map(key).sort()).toEqual(
			shipped
				.map(key)
				.filter(
					(k) => k !== 'RuntimeClass/namzu-kata' && k !== 'SandboxTemplate/namzu-sandbox-workspace',
				)
				.sort(),
		)
		for (const object of objects) {
			const original = shipped.find((o) => key(o) === key(object))
			if (key(object) !== 'SandboxTemplate/namzu-sandbox-task') {
				expect(object, key(object)).toEqual(original)
				continue
			}
			const expected = structuredClone(original)
			delete expected.spec.podTemplate.spec.runtimeClassName
			expect(object).toEqual(expected)
			const context = object.spec.podTemplate.spec.containers[0].securityContext
			expect(context).toMatchObject({
				privileged: false,
				runAsUser: 1001,
				runAsNonRoot: true,
				allowPrivilegeEscalation: false,
				capabilities: { drop: ['ALL'] },
			})
		}
	})

	it("runs a workspace's whole life under rbac.yaml's Role: create, write, suspend, resume onto the same disk, destroy with the disk", async () => {
		// A block-disk template of the harness's own shape (the kubelet mounts its disk), on the
		// shipped agent port: the shipped ingress policy opens only that one to the host. The
		// shipped template's own device branch is the next test.
		const template = sandboxTemplate('ws-under-rbac', { workspace: 'block' }) as Any
		for (const container of template.spec.podTemplate.spec.containers) {
			for (const entry of container.env) {
				if (entry.name === 'NAMZU_AGENT_TCP_PORT')
					entry.value = String(DEFAULT_KUBERNETES_AGENT_PORT)
			}
			for (const port of container.ports ?? []) port.containerPort = DEFAULT_KUBERNETES_AGENT_PORT
		}
		await h.cluster.api.create(paths.templates(h.namespace), template)
		const config = configAs(await tokenFor('namzu-sandbox'), {
			sandboxTemplateName: 'ws-under-rbac',
		})
		const workspace = await createKubernetesWorkspace(config, { workspaceId: 'under-rbac' })
		try {
			await workspace.writeFile('kept.txt', 'across a suspend')
			expect(workspace.identity.sandboxUid).not.toBe('')
			await workspace.suspend()
			expect(workspace.suspended).toBe(true)
			await workspace.resume()
			expect((await workspace.readFile('kept.txt')).toString()).toBe('across a suspend')
		} finally {
			await workspace.destroy({ deleteDisk: true, flush: false })
		}
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, 'namzu-ws-under-rbac'))
	})

	it("the shipped workspace template's device branch: the entrypoint formats and mounts the disk itself, and it survives suspend/resume", async () => {
		// The operator's one edit here: a disk this node provisions (the shipped 20Gi is over its cap).
		const templatePath = `${paths.templates(h.namespace)}/namzu-sandbox-workspace`
		const [shipped] = manifestObjects('sandboxtemplate-workspace.yaml') as Any[]
		const claims = structuredClone(shipped.spec.volumeClaimTemplates) as Any[]
		for (const claim of claims) claim.spec.resources.requests.storage = '256Mi'
		await h.cluster.api.patch(templatePath, { spec: { volumeClaimTemplates: claims } }, 'merge')
		const config = configAs(await tokenFor('namzu-sandbox'), {
			sandboxTemplateName: 'namzu-sandbox-workspace',
		})
		// The filesystem type and source of the topmost mount at /workspace (over the image's own
		// directory there): the fields after mountinfo's `-` separator.
		const TOP_WORKSPACE_MOUNT =
			'awk \'$5 == "/workspace" { for (i = 7; i < NF; i++) if ($i == "-") top = $(i + 1) " " $(i + 2) } END { print top }\' /proc/self/mountinfo'
		const workspace = await createKubernetesWorkspace(config, { workspaceId: 'shipped-device' })
		try {
			// The workspace is the device node the entrypoint mounted in the container's own mount
			// namespace — not a directory the kubelet mounted on the host and bound in.
			const mounts = await workspace.exec('sh', [
				'-c',
				`${TOP_WORKSPACE_MOUNT}; id -un; stat -c %U /workspace`,
			])
			expect(mounts).toMatchObject({ exitCode: 0, stdout: 'ext4 /dev/workspace\nnamzu\nnamzu\n' })
			await workspace.writeFile('kept.txt', 'on the disk the entrypoint formatted')
			await workspace.suspend()
			await workspace.resume()
			expect((await workspace.readFile('kept.txt')).toString()).toBe(
				'on the disk the entrypoint formatted',
			)
			// The second start found a filesystem (blkid status 0): mounted, never reformatted.
			const again = await workspace.exec('sh', ['-c', TOP_WORKSPACE_MOUNT])
			expect(again.stdout).toBe('ext4 /dev/workspace\n')
		} finally {
			await workspace.destroy({ deleteDisk: true, flush: false })
		}
		await waitGone(h.cluster.api, paths.sandbox(h.namespace, 'namzu-ws-shipped-device'))
	})

	it("claims from the shipped warm pool under rbac-claimant.yaml's Role, which may not create a Sandbox", async () => {
		await waitFor(
			'the shipped warm pool to be ready',
			async () => {
				const pool = await h.cluster.api.find<Any>(
					paths.pool(h.namespace, 'namzu-sandbox-task-pool'),
				)
				return pool?.status?.readyReplicas === 1 ? true : undefined
			},
			{ timeoutMs: 90_000, intervalMs: 250 },
		)
		const token = await tokenFor('namzu-sandbox-claimant')
		expect(
			await accessAllowed(h.cluster.access, token, h.namespace, {
				group: 'agents.x-k8s.io',
				resource: 'sandboxes',
				verb: 'create',
			}),
		).toBe(false)
		const provider = createKubernetesSandboxProvider(
			configAs(token, { warmPoolName: 'namzu-sandbox-task-pool' }),
		)
		try {
			const sandbox = await provider.create()
			try {
				expect((await sandbox.exec('id', ['-u'])).stdout).toBe('1001\n')
			} finally {
				await sandbox.destroy()
			}
		} finally {
			await provider.close()
		}
	})
})
