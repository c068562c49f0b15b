// NetworkPolicy enforced by the process kubelet, proven with real connections from inside sandbox
// pods, a positive control beside each negative one: a deny-all pod cannot reach a host listener
// or a peer pod, an allow-all pod can; a second widening policy really widens (and the union check
// refused it beforehand); the agent port is unreachable from a pod the ingress policy does not
// admit, while the host it admits keeps working. Policies are re-read on every kubelet sync, so
// each probe polls until the verdict settles within a bound.
import { createServer, type Server } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import {
	type KubernetesEgressConfig,
	KubernetesEgressPolicyUnionError,
	type Sandbox,
} from '../../../src/index.js'
import { type KubeObject, listItems } from '../../cluster/cluster-objects.js'
import { agentPort, paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { rejection } from './error-chain.js'
import { templateName, useKubernetesHarness } from './kubernetes-harness.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-enforce' })
const created: string[] = []
let listener: Server
let listenerPort = 0

beforeAll(async () => {
	listener = createServer((socket) => {
		// The probe exits the moment it connects: its reset is expected.
		socket.on('error', () => {})
		socket.end('hello\n')
	})
	await new Promise<void>((resolve) =>
		listener.listen(0, h.cluster.kubelet.network.gateway, () => resolve()),
	)
	const address = listener.address()
	listenerPort = typeof address === 'object' && address !== null ? address.port : 0
})

afterAll(async () => {
	await new Promise<void>((resolve) => listener.close(() => resolve()))
})

afterEach(async () => {
	for (const name of created.splice(0)) {
		await h.cluster.api.remove(paths.networkPolicy(h.namespace, name)).catch(() => {})
	}
})

async function apply(policy: Record<string, unknown>): Promise<void> {
	await h.cluster.api.create(paths.networkPolicies(h.namespace), policy)
	created.push((policy.metadata as { name: string }).name)
}

function translated(egress: KubernetesEgressConfig) {
	const resolved = resolveKubernetesBackendConfig({ ...h.config(), egress })
	if (!resolved.egress) throw new Error('no egress')
	return translatedPolicyObject(translateEgressPolicy(resolved.egress, templateName), h.namespace)
}

// Connects from inside the guest: `open`, or `closed <code>` / `timeout` (a dropped SYN).
const PROBE = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2]});
s.on('connect',()=>{console.log('open');process.exit(0)});
s.on('error',(e)=>{console.log('closed '+e.code);process.exit(0)});
setTimeout(()=>{console.log('timeout');process.exit(0)},800)`

async function probe(from: Sandbox, host: string, port: number): Promise<string> {
	const result = await from.exec('node', ['-e', PROBE, host, String(port)])
	return result.stdout.trim()
}

/** Polls until the probe answers as expected: policies take effect within a kubelet sync. */
async function settles(from: Sandbox, host: string, port: number, open: boolean): Promise<string> {
	return waitFor(
		`${host}:${port} ${open ? 'open' : 'blocked'}`,
		async () => {
			const verdict = await probe(from, host, port)
			return (verdict === 'open') === open ? verdict : undefined
		},
		{ timeoutMs: 15_000, intervalMs: 100 },
	)
}

async function podIp(sandbox: Sandbox): Promise<string> {
	const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
	const ip = (pod.status as { podIP?: string } | undefined)?.podIP
	if (!ip) throw new Error(`pod ${sandbox.id} has no IP`)
	return ip
}

async function open(config: Parameters<typeof h.provider>[0] = {}): Promise<Sandbox> {
	const sandbox = await h.provider(config).create()
	h.open.push(sandbox)
	return sandbox
}

describe('NetworkPolicy enforced by the harness kubelet', () => {
	it('allow-all reaches the host listener and a peer; deny-all reaches neither, while the host still reaches the agent', async () => {
		const gateway = h.cluster.kubelet.network.gateway
		const allowAll: KubernetesEgressConfig = { policy: { kind: 'allow-all' } }
		await apply(translated(allowAll))
		// A peer pod's non-agent port, opened to the namespace, so only egress decides.
		await apply({
			apiVersion: 'networking.k8s.io/v1',
			kind: 'NetworkPolicy',
			metadata: { name: 'peer-port-open' },
			spec: {
				podSelector: {},
				policyTypes: ['Ingress'],
				ingress: [{ from: [{ podSelector: {} }], ports: [{ protocol: 'TCP', port: 9090 }] }],
			},
		})
		const a = await open({ egress: allowAll })
		const peer = await open({ egress: allowAll })
		const peerIp = await podIp(peer)
		// The peer serves 9090 in the background (this tier does not reap detached descendants).
		await peer.exec('sh', [
			'-c',
			`nohup node -e "require('net').createServer(s=>s.end('p')).listen(9090)" >/dev/null 2>&1 &`,
		])
		expect(await settles(a, gateway, listenerPort, true)).toBe('open')
		expect(await settles(a, peerIp, 9090, true)).toBe('open')

		await h.cluster.api.remove(paths.networkPolicy(h.namespace, `${templateName}-egress`))
		created.splice(created.indexOf(`${templateName}-egress`), 1)
		const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }
		await apply(translated(denyAll))
		expect(await settles(a, gateway, listenerPort, false)).toBe('timeout')
		expect(await settles(a, peerIp, 9090, false)).toBe('timeout')
		// Positive control: the host reaches the agent of the deny-all pod (ingress from the host).
		expect(await a.exec('echo', ['alive'])).toMatchObject({ exitCode: 0, stdout: 'alive\n' })
	})

	it('a second widening policy really widens, and the union check refused it beforehand', async () => {
		const gateway = h.cluster.kubelet.network.gateway
		const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }
		await apply(translated(denyAll))
		const a = await open({ egress: denyAll })
		expect(await settles(a, gateway, listenerPort, false)).toBe('timeout')

		await apply({
			apiVersion: 'networking.k8s.io/v1',
			kind: 'NetworkPolicy',
			metadata: { name: 'widen-to-host' },
			spec: {
				podSelector: {},
				policyTypes: ['Egress'],
				egress: [{ to: [{ ipBlock: { cidr: `${gateway}/32` } }] }],
			},
		})
		const { error } = await rejection(h.provider({ egress: denyAll }).create())
		expect(error).toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({ refusal: 'policy-widens-egress' })
		expect(await settles(a, gateway, listenerPort, true)).toBe('open')
	})

	it('the agent port is unreachable from a pod the ingress policy does not admit; the host it admits reaches it', async () => {
		const a = await open()
		const b = await open()
		const bIp = await podIp(b)
		expect(await settles(a, bIp, agentPort, false)).toBe('timeout')
		expect(await b.exec('echo', ['host'])).toMatchObject({ exitCode: 0, stdout: 'host\n' })
		// Positive control: admitting the namespace's pods on the agent port opens it to a.
		await apply({
			apiVersion: 'networking.k8s.io/v1',
			kind: 'NetworkPolicy',
			metadata: { name: 'agent-open-to-namespace' },
			spec: {
				podSelector: {},
				policyTypes: ['Ingress'],
				ingress: [{ from: [{ podSelector: {} }], ports: [{ protocol: 'TCP', port: agentPort }] }],
			},
		})
		expect(await settles(a, bIp, agentPort, true)).toBe('open')
		const policies = await listItems(h.cluster.api, paths.networkPolicies(h.namespace))
		expect(policies.map((policy) => policy.metadata.name)).toContain('agent-open-to-namespace')
	})
})
