import { importTypeScript } from './lib.mjs'
const h = await importTypeScript('k8s29-wvp', [
	"export { startTestCluster } from './test/cluster/test-cluster.ts'",
	"export { createTestNamespace, boundSandboxName } from './test/cluster/cluster-objects.ts'",
	"export { paths, sandboxTemplate, warmPool, sandboxClaim } from './test/cluster/sandbox-fixtures.ts'",
	"export { createKubernetesClient } from './src/backends/kubernetes/api/create-kubernetes-client.ts'",
	"export { apiPortOf } from './src/backends/kubernetes/client-port.ts'",
	"export { evaluateClaimReadiness } from './src/backends/kubernetes/readiness.ts'",
])
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const cluster = await h.startTestCluster()
const rows = []
try {
	const ns = await h.createTestNamespace(cluster.api, 'wvp')
	await cluster.api.create(h.paths.templates(ns), h.sandboxTemplate('t'))
	await cluster.api.create(h.paths.pools(ns), h.warmPool('p', 't', 4))
	const poolReady = async (at) => {
		for (;;) {
			const o = await cluster.api.get(h.paths.pool(ns, 'p'))
			if ((o.status?.readyReplicas ?? 0) >= at) return
			await sleep(50)
		}
	}
	await poolReady(4)
	const port = h.apiPortOf(h.createKubernetesClient({ server: cluster.access.server, ca: cluster.access.caPem, getToken: async () => cluster.access.token }))
	const ready = (o) => h.evaluateClaimReadiness(o).state === 'ready'
	for (let round = 0; round < Number(process.argv[2] ?? 20); round++) {
		await poolReady(2)
		const name = `wvp-${round}-${Math.random().toString(36).slice(2, 7)}`
		const stop = new AbortController()
		const t0 = performance.now()
		let watchAt, pollAt, postAt, polls = 0
		const watching = (async () => {
			for await (const ev of port.watch(h.paths.claims(ns), { fieldSelector: `metadata.name=${name}`, timeoutSeconds: 30, signal: stop.signal })) {
				if ((ev.type === 'ADDED' || ev.type === 'MODIFIED') && ready(ev.object)) { watchAt = performance.now() - t0; return }
			}
		})().catch(() => {})
		await port.create(h.paths.claims(ns), h.sandboxClaim(name, 'p'))
		postAt = performance.now() - t0
		while (pollAt === undefined && performance.now() - t0 < 5000) {
			polls++
			const o = await port.get(h.paths.claim(ns, name))
			if (ready(o)) pollAt = performance.now() - t0
			else await sleep(5)
		}
		await Promise.race([watching, sleep(3000)])
		stop.abort()
		rows.push({ postAt, pollAt, watchAt, polls })
		console.error(`round ${round}: post ${postAt.toFixed(1)} poll ${pollAt?.toFixed(1)} watch ${watchAt?.toFixed(1)} polls ${polls}`)
		await cluster.api.remove(h.paths.claim(ns, name))
	}
	const p50 = (k) => { const v = rows.map((r) => r[k]).filter((x) => x !== undefined).sort((a, b) => a - b); return v[Math.floor(v.length / 2)] }
	console.log(`p50 post ${p50('postAt').toFixed(1)} poll-seen ${p50('pollAt').toFixed(1)} watch-seen ${p50('watchAt').toFixed(1)} polls ${p50('polls')}`)
	console.log(`watch minus poll p50 ${(() => { const d = rows.filter(r=>r.watchAt&&r.pollAt).map(r=>r.watchAt-r.pollAt).sort((a,b)=>a-b); return d[Math.floor(d.length/2)].toFixed(1) })()}`)
} finally {
	await cluster.stop()
}
