// Acquire: create() → first exec('true') result, cold and from a warm pool, against spawning the
// same bubblewrap command line running `node -e 0` (the floor any bwrap-based sandbox pays): the
// same minimal root, started as an unprivileged uid through setpriv on a root host.
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildBwrapArgs } from '../dist/backends/local/bwrap-argv.js'
import { readHostRootLayout } from '../dist/backends/local/host-root-layout.js'
import { HOST_TOOLS } from '../dist/backends/local/host-tools.js'
import { prepareAgentRuntime } from '../dist/backends/local/runtime-cache.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	perSandboxUids,
	withSandboxIdentity,
} from '../dist/backends/local/sandbox-identity.js'
import { planSandboxRoot } from '../dist/backends/local/sandbox-root.js'
import { agentBundlePath } from '../dist/host/agent-bundle-path.js'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, spawnAndWait, summarize, timeEach } from './lib.mjs'

const count = argInt('count', 30)

async function acquireOnce(provider) {
	const start = performance.now()
	const sandbox = await provider.create()
	const result = await sandbox.exec('true')
	const elapsed = performance.now() - start
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	await sandbox.destroy()
	return elapsed
}

async function bwrapBaseline(n) {
	const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-bwrap-'))
	try {
		await chmod(stateDir, 0o711)
		const workspace = join(stateDir, 'workspace')
		await mkdir(workspace)
		// The last uid of the range: the bench holds no lock, so it keeps clear of real sandboxes.
		const uid = DEFAULT_SANDBOX_UID_RANGE.first + DEFAULT_SANDBOX_UID_RANGE.count - 1
		const identity = perSandboxUids()
			? { mode: 'per-sandbox-uid', uid, gid: uid, lockPath: '' }
			: { mode: 'host-user', uid: process.getuid(), gid: process.getgid() }
		if (identity.mode === 'per-sandbox-uid') await chown(workspace, uid, uid)
		const runtime = await prepareAgentRuntime(stateDir, {
			nodePath: process.execPath,
			agentPath: agentBundlePath(),
			readableNode: false,
		})
		const root = planSandboxRoot({
			layout: await readHostRootLayout(),
			workspace: { source: workspace, target: workspace },
			homeDir: '/tmp/home',
			runtime,
			readOnly: [],
			hidden: [],
		})
		const args = buildBwrapArgs({
			root: root.mounts,
			workspace,
			egress: 'deny-all',
			hostname: 'namzu-sandbox',
			command: [process.execPath, '-e', '0'],
		})
		const [program, ...rest] = withSandboxIdentity(HOST_TOOLS.setpriv, identity, [
			'/usr/bin/bwrap',
			...args,
		])
		return await timeEach(n, () => spawnAndWait(program, rest))
	} finally {
		await rm(stateDir, { recursive: true, force: true })
	}
}

const baseline = summarize(await bwrapBaseline(count))

// NAMZU_BENCH_COMPARE_LIB=<another build's dist/index.js>: cold acquires of that build interleaved
// with this one's (alternating order), so a change's create-time cost is a same-run ratio.
const compareLib = process.env.NAMZU_BENCH_COMPARE_LIB
const other = compareLib
	? (await import(new URL(`file://${compareLib}`).href)).createSandboxProvider({
			backend: { tier: 'process' },
		})
	: undefined
const cold = createSandboxProvider({ backend: { tier: 'process' } })
const coldSamples = []
const otherSamples = []
try {
	for (let i = 0; i < 3; i++) {
		await acquireOnce(cold)
		if (other) await acquireOnce(other)
	}
	for (let i = 0; i < count; i++) {
		if (other && i % 2 === 0) otherSamples.push(await acquireOnce(other))
		coldSamples.push(await acquireOnce(cold))
		if (other && i % 2 === 1) otherSamples.push(await acquireOnce(other))
	}
} finally {
	await cold.close()
	await other?.close()
}
const coldStats = summarize(coldSamples)
const otherStats = other ? summarize(otherSamples) : undefined

// Warm pool: the pool refills in the background between acquires; give it time to refill so each
// sample measures a warm hand-out (the steady state of a host that acquires less often than ~10/s).
const warm = createSandboxProvider({ backend: { tier: 'process', warmPoolSize: 4 } })
const warmSamples = []
const warmCreateSamples = []
try {
	await new Promise((resolve) => setTimeout(resolve, 1500))
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		const sandbox = await warm.create()
		warmCreateSamples.push(performance.now() - start)
		const result = await sandbox.exec('true')
		warmSamples.push(performance.now() - start)
		if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
		await sandbox.destroy()
		await new Promise((resolve) => setTimeout(resolve, 250))
	}
} finally {
	await warm.close()
}
const warmStats = summarize(warmSamples)
const warmCreateStats = summarize(warmCreateSamples)

printTable(`acquire (n=${count})`, [
	`bwrap + node -e 0 (baseline)        p50 ${ms(baseline.p50)}  p95 ${ms(baseline.p95)}`,
	`cold create() → exec('true') result  p50 ${ms(coldStats.p50)}  p95 ${ms(coldStats.p95)}`,
	`cold ratio to baseline               p50 ${ratio(coldStats.p50, baseline.p50)}  p95 ${ratio(coldStats.p95, baseline.p95)}`,
	`warm create() → exec('true') result  p50 ${ms(warmStats.p50)}  p95 ${ms(warmStats.p95)}`,
	`warm ratio to baseline               p50 ${ratio(warmStats.p50, baseline.p50)}`,
	`warm create() alone                  p50 ${ms(warmCreateStats.p50)}  p95 ${ms(warmCreateStats.p95)}`,
	...(otherStats
		? [
				`cold, ${compareLib}  p50 ${ms(otherStats.p50)}  p95 ${ms(otherStats.p95)}`,
				`cold, this build / that build        p50 ${ratio(coldStats.p50, otherStats.p50)}`,
			]
		: []),
])
