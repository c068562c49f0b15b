// Warm acquire on the local cluster harness (test/cluster): `create()` → ready handle of the
// Kubernetes task backend, p50/p95 over --count acquires, and the API requests each one sends
// (through a recording HTTP front), how many of them ran the privilege probe themselves, and the
// time from the claim seen bound to the handle out. Baseline in the same run, interleaved: the controller alone
// binding a bare claim (POST SandboxClaim → `status.sandbox.name` set, polled every 10 ms). Before
// every measured acquire the pool is back to --pool ready replicas, so each one is warm.
//
// A second baseline, also interleaved: the claim exactly as the backend POSTs it (with its
// lifecycle), bound by the controller alone and read the same way.
//
// The recording front is one more HTTP hop per request that neither baseline pays, so every round
// also times a second provider talking to the API server directly (TLS with the cluster's CA, as a
// user's kubeconfig would): that is the row compared with the baselines; the front's row gives the
// request breakdown.
//
//   node bench/kubernetes-acquire.mjs [--count 30] [--pool 4]
//
// Needs the cluster binaries (`npm run cluster:build`), root, bwrap and iproute2 (process kubelet).
import { importTypeScript } from './lib.mjs'

const arg = (name, fallback) => {
	const index = process.argv.indexOf(`--${name}`)
	return index === -1 ? fallback : Number(process.argv[index + 1])
}
const count = arg('count', 30)
const poolReplicas = arg('pool', 6)
const warmFloor = Math.max(1, Math.ceil(poolReplicas / 2))

// The harness and the backend are TypeScript: bundle the few entry points this script needs.
const h = await importTypeScript('kubernetes-acquire', [
	"export { startTestCluster } from './test/cluster/test-cluster.ts'",
	"export { createTestNamespace, boundSandboxName } from './test/cluster/cluster-objects.ts'",
	"export { paths, sandboxTemplate, warmPool, sandboxClaim, agentPort, agentIngressPolicy } from './test/cluster/sandbox-fixtures.ts'",
	"export { startRecordingApiProxy } from './test/backends/kubernetes/recording-api-proxy.ts'",
	"export { createSandboxProvider } from './src/index.ts'",
	"export { buildSandboxClaim, shutdownTimeAt } from './src/backends/kubernetes/kubernetes-objects.ts'",
])

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const percentile = (values, p) => {
	const sorted = [...values].sort((a, b) => a - b)
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}
const ms = (value) => `${value.toFixed(1)} ms`

const cluster = await h.startTestCluster()
let proxy
try {
	console.log(
		`cluster: Kubernetes ${cluster.versions.kubernetes}, agent-sandbox ${cluster.versions.agentSandbox}`,
	)
	const ns = await h.createTestNamespace(cluster.api, 'bench')
	const template = 'agent-template'
	const pool = 'agent-pool'
	await cluster.api.create(h.paths.templates(ns), h.sandboxTemplate(template))
	// The backend refuses an agent port no ingress policy closes; a deployment applies one.
	await cluster.api.create(
		h.paths.networkPolicies(ns),
		h.agentIngressPolicy(
			'namzu-sandbox-ingress',
			undefined,
			`${cluster.kubelet.network.gateway}/32`,
		),
	)
	await cluster.api.create(h.paths.pools(ns), h.warmPool(pool, template, poolReplicas))
	const poolReady = async (at) => {
		const deadline = Date.now() + 120_000
		for (;;) {
			const object = await cluster.api.get(h.paths.pool(ns, pool))
			if ((object.status?.readyReplicas ?? 0) >= at) return
			if (Date.now() > deadline) throw new Error(`warm pool did not reach ${at} ready in 120 s`)
			await sleep(50)
		}
	}
	const benchStart = performance.now()
	await poolReady(poolReplicas)
	const poolFull = () => poolReady(warmFloor)

	let lastProbe
	proxy = await h.startRecordingApiProxy(cluster.access)
	const token = cluster.access.token
	const provider = h.createSandboxProvider({
		backend: {
			tier: 'microvm',
			service: 'kubernetes',
			namespace: ns,
			access: { server: proxy.server, getToken: async () => token },
			sandboxTemplateName: template,
			warmPoolName: pool,
			agentPort: h.agentPort,
			agentAddress: 'pod-ip',
			// The privilege probe is the first exec: its split says what the dial and probe cost.
			onExecTiming: (timing) => {
				lastProbe = timing
			},
		},
	})

	// The path a user runs: the API server itself, no front.
	const direct = h.createSandboxProvider({
		backend: {
			tier: 'microvm',
			service: 'kubernetes',
			namespace: ns,
			access: {
				server: cluster.access.server,
				...(cluster.access.caPem === undefined ? {} : { ca: cluster.access.caPem }),
				getToken: async () => token,
			},
			sandboxTemplateName: template,
			warmPoolName: pool,
			agentPort: h.agentPort,
			agentAddress: 'pod-ip',
		},
	})
	const acquireDirect = []

	const baseline = []
	const baselineReady = []
	const acquire = []
	// Inside create(), from its start: the POST's arrival at the API front, and the pod GET's (the
	// claim judged Ready and bound); what follows the pod GET is the dial and the probe.
	const toPost = []
	const toPodGet = []
	const sequence = []
	const requests = []
	const probe = []
	// From the pod GET's arrival (the claim seen bound) to the handle out.
	const afterBind = []
	// The controller alone binding a claim: POST, then GET every 10 ms until bound and Ready.
	const bindAlone = async (name, body) => {
		await poolFull()
		const started = performance.now()
		await cluster.api.create(h.paths.claims(ns), body)
		let bound
		for (;;) {
			const claim = await cluster.api.get(h.paths.claim(ns, name))
			if (bound === undefined && h.boundSandboxName(claim) !== undefined) {
				bound = performance.now() - started
			}
			// What the backend must also see: the claim's Ready condition True.
			const ready = (claim.status?.conditions ?? []).some(
				(c) => c.type === 'Ready' && c.status === 'True',
			)
			if (bound !== undefined && ready) break
			await sleep(10)
		}
		const ready = performance.now() - started
		await cluster.api.remove(h.paths.claim(ns, name))
		return { bound, ready }
	}
	// The second baseline: the claim exactly as the backend POSTs it (its lifecycle: shutdownTime
	// and shutdownPolicy Delete, which every created object must carry).
	const asBackend = []
	for (let round = 0; round < count; round += 1) {
		// Baseline: the controller alone binds a bare claim.
		const bare = await bindAlone(`bench-bare-${round}`, h.sandboxClaim(`bench-bare-${round}`, pool))
		baseline.push(bare.bound)
		baselineReady.push(bare.ready)
		const lifecycleName = `bench-life-${round}`
		const life = await bindAlone(
			lifecycleName,
			h.buildSandboxClaim({
				name: lifecycleName,
				warmPoolName: pool,
				shutdownTime: h.shutdownTimeAt(Date.now(), 3600),
				claimLabels: {},
			}),
		)
		asBackend.push(life.ready)

		// The backend: create() → a ready, probed handle.
		await poolFull()
		proxy.clear()
		const started = performance.now()
		lastProbe = undefined
		const sandbox = await provider.create()
		acquire.push(performance.now() - started)
		const post = proxy.requests.findIndex((line) => line.startsWith('POST '))
		const podGet = proxy.requests.findIndex((line) =>
			/^GET \/api\/v1\/namespaces\/[^/]+\/pods\//.test(line),
		)
		if (post >= 0) toPost.push(proxy.arrivals[post] - started)
		if (podGet >= 0) {
			toPodGet.push(proxy.arrivals[podGet] - started)
			afterBind.push(acquire[round] - (proxy.arrivals[podGet] - started))
		}
		sequence.push(
			proxy.requests.map((line, index) => [line.split('?')[0], proxy.arrivals[index] - started]),
		)
		if (lastProbe) probe.push(lastProbe.reserveMs + lastProbe.executeMs + lastProbe.drainMs)
		requests.push(proxy.requests.length)
		await sandbox.destroy()

		// The same, straight to the API server.
		await poolFull()
		const directStarted = performance.now()
		const directSandbox = await direct.create()
		acquireDirect.push(performance.now() - directStarted)
		await directSandbox.destroy()
		process.stderr.write(
			`round ${round + 1}/${count}: baseline ${ms(baseline[round])}, acquire ${ms(acquire[round])}, direct ${ms(acquireDirect[round])}\n`,
		)
	}
	await Promise.all([provider.close(), direct.close()])

	const b50 = percentile(baseline, 50)
	const a50 = percentile(acquire, 50)
	const minutes = ((performance.now() - benchStart) / 60_000).toFixed(1)
	console.log(
		`\nwarm acquire, n = ${count}, pool of ${poolReplicas} (≥ ${warmFloor} ready before each step), ${minutes} min`,
	)
	console.log(`| | p50 | p95 | ratio to baseline (p50) |`)
	console.log(`|---|---|---|---|`)
	console.log(
		`| baseline: POST bare claim → status.sandbox set | ${ms(b50)} | ${ms(percentile(baseline, 95))} | 1× |`,
	)
	console.log(
		`| baseline: POST bare claim → Ready=True and status.sandbox set (what create() waits for) | ${ms(percentile(baselineReady, 50))} | ${ms(percentile(baselineReady, 95))} | ${(percentile(baselineReady, 50) / b50).toFixed(2)}× |`,
	)
	const l50 = percentile(asBackend, 50)
	console.log(
		`| baseline: POST the backend's own claim (with its lifecycle) → Ready=True and bound | ${ms(l50)} | ${ms(percentile(asBackend, 95))} | ${(l50 / b50).toFixed(2)}× |`,
	)
	const d50 = percentile(acquireDirect, 50)
	console.log(
		`| \`create()\` → ready handle (probe included), straight to the API server (TLS, the cluster's CA) | ${ms(d50)} | ${ms(percentile(acquireDirect, 95))} | **${(d50 / b50).toFixed(2)}×**; ${(d50 / l50).toFixed(2)}× the backend's own claim bound alone |`,
	)
	console.log(
		`| \`create()\` → ready handle (probe included), through the recording front | ${ms(a50)} | ${ms(percentile(acquire, 95))} | ${(a50 / b50).toFixed(2)}×; ${(a50 / l50).toFixed(2)}× the backend's own claim bound alone |`,
	)
	console.log(
		`\nthe privilege probe ran inside ${probe.length} of ${count} create() calls (the others were handed a pod the provider had probed before the claim)`,
	)
	if (probe.length > 0) {
		console.log(
			`the probe inside create() (dial + reserve + execute), where it ran: p50 ${ms(percentile(probe, 50))}`,
		)
	}
	if (afterBind.length > 0) {
		console.log(
			`from the claim seen bound (the pod GET's arrival) to the handle out: p50 ${ms(percentile(afterBind, 50))}, p95 ${ms(percentile(afterBind, 95))}`,
		)
	}
	if (toPodGet.length > 0) {
		console.log(
			`\ninside create(), p50 from its start: POST at the API front ${ms(percentile(toPost, 50))}, pod GET (claim seen Ready and bound) ${ms(percentile(toPodGet, 50))}; claim POST → Ready seen ≈ ${ms(percentile(toPodGet, 50) - percentile(toPost, 50))} against the controller's ${ms(percentile(baselineReady, 50))} in the baseline`,
		)
	}
	// Requests by kind (the first create also reads the pool once), arrival p50 from create()'s start.
	const byLine = new Map()
	for (const row of sequence) {
		for (const [line, at] of row) {
			const kind = line.replace(/\/pods\/[^/]+$/, '/pods/<bound>')
			byLine.set(kind, [...(byLine.get(kind) ?? []), at])
		}
	}
	console.log('\nrequests of create(), arrival at the API front from its start (p50, how many):')
	for (const [line, ats] of byLine) {
		console.log(`  ${line}: ${ms(percentile(ats, 50))} (${ats.length})`)
	}
	const mean = requests.reduce((sum, value) => sum + value, 0) / requests.length
	console.log(
		`\nAPI requests per acquire: mean ${mean.toFixed(2)}, min ${Math.min(...requests)}, max ${Math.max(...requests)}`,
	)
	await cluster.api.remove(h.paths.namespace(ns)).catch(() => {})
} finally {
	await proxy?.close()
	await cluster.stop()
}
