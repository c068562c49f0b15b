// Acquire: create() → first exec('true') result, cold (deny-all and allow-all) and from a warm
// pool, against spawning the same bubblewrap command line running `node -e 0` (the floor any
// bwrap-based sandbox pays): the same minimal root with its sized tmpfs mounts, started as an
// unprivileged uid through setpriv on a root host. The cold rows run interleaved, round by round,
// with the baseline, so every ratio compares samples taken under the same load.
// `--before <dist dir>` (or `NAMZU_BENCH_COMPARE_LIB=<dist dir>/index.js`) adds the cold deny-all
// row of another build (e.g. `--before /work/main/dist`) to the same rounds.
import { spawn } from 'node:child_process'
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildBwrapArgs } from '../dist/backends/local/bwrap-argv.js'
import { readHostRootLayout } from '../dist/backends/local/host-root-layout.js'
import { planSandboxRoot } from '../dist/backends/local/sandbox-root.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	perSandboxUids,
	withSandboxIdentity,
} from '../dist/backends/machine/claims/sandbox-identity.js'
import { HOST_TOOLS } from '../dist/backends/machine/launch/host-tools.js'
import { prepareAgentRuntime } from '../dist/backends/machine/launch/runtime-cache.js'
import { readHostAddresses } from '../dist/backends/machine/network/egress-network.js'
import { sandboxGuardRuleset } from '../dist/backends/machine/network/host-address-guard.js'
import {
	firewallCommand,
	slirpArguments,
	waitForLoopback,
} from '../dist/backends/machine/network/slirp-network.js'
import { resolveSandboxLimits } from '../dist/backends/machine/spec/sandbox-limits.js'
import { agentBundlePath } from '../dist/host/sandbox/agent-bundle-path.js'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, recordHeadline, spawnAndWait, summarize } from './lib.mjs'

const count = argInt('count', 30)
const beforeIndex = process.argv.indexOf('--before')
const compareLib = process.env.NAMZU_BENCH_COMPARE_LIB
const beforeDist =
	beforeIndex !== -1
		? resolve(process.argv[beforeIndex + 1] ?? '')
		: compareLib
			? dirname(resolve(compareLib))
			: undefined
const ALLOW_ALL = { egress: { kind: 'allow-all' } }

async function acquireOnce(provider, config = {}) {
	const start = performance.now()
	const sandbox = await provider.create(config)
	const result = await sandbox.exec('true')
	const elapsed = performance.now() - start
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	await sandbox.destroy()
	return elapsed
}

function timed(fn) {
	const start = performance.now()
	return fn().then(() => performance.now() - start)
}

/**
 * The hardened command line for `command`, behind setpriv as a sandbox uid on a root host (the
 * last uid of the range: the bench holds no lock, so it keeps clear of real sandboxes).
 */
async function hardenedCommandLine(stateDir, options) {
	const workspace = join(stateDir, 'workspace')
	await mkdir(workspace, { recursive: true })
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
		tmpfsSizes: resolveSandboxLimits({}, { totalMemoryBytes: totalmem() }).tmpfs,
	})
	const args = buildBwrapArgs({
		root: root.mounts,
		workspace,
		hostname: 'namzu-sandbox',
		...options,
	})
	return withSandboxIdentity(HOST_TOOLS.setpriv, identity, ['/usr/bin/bwrap', ...args])
}

/** The allow-all plumbing alone, serially: slirp4netns until ready, then the guard through nft. */
async function slirpAndGuardOnce(commandLine) {
	const [program, ...rest] = commandLine
	const bwrap = spawn(program, rest, { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] })
	try {
		const pid = await new Promise((done, fail) => {
			let text = ''
			bwrap.stdio[3].on('data', (chunk) => {
				text += chunk
				try {
					done(JSON.parse(text)['child-pid'])
				} catch {
					// Not complete yet.
				}
			})
			bwrap.once('exit', () => fail(new Error('bwrap exited')))
		})
		await waitForLoopback(pid)
		const start = performance.now()
		const slirp = spawn('/usr/bin/slirp4netns', slirpArguments(pid), {
			stdio: ['ignore', 'ignore', 'ignore', 'ignore', 'pipe'],
		})
		await new Promise((done) => slirp.stdio[4].once('data', done))
		const [nsenter, ...nsenterArgs] = firewallCommand(
			{ slirp4netns: '', nft: '/usr/sbin/nft', nsenter: '/usr/bin/nsenter' },
			pid,
			process.getuid() === 0,
		)
		const nft = spawn(nsenter, nsenterArgs, { stdio: ['pipe', 'ignore', 'inherit'] })
		nft.stdin.end(sandboxGuardRuleset(readHostAddresses()))
		await new Promise((done) => nft.once('exit', done))
		const elapsed = performance.now() - start
		slirp.kill('SIGKILL')
		return elapsed
	} finally {
		bwrap.kill('SIGKILL')
	}
}

const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-bwrap-'))
await chmod(stateDir, 0o711)
const [baselineProgram, ...baselineArgs] = await hardenedCommandLine(stateDir, {
	egress: 'deny-all',
	command: [process.execPath, '-e', '0'],
})
const plumbingCommand = await hardenedCommandLine(stateDir, {
	egress: 'allow-all',
	networkArgs: ['--info-fd', '3'],
	command: ['/bin/sleep', '10'],
})
const baselineOnce = () => timed(() => spawnAndWait(baselineProgram, baselineArgs))

// Its own state directory: a provider's hold on the copy-on-write volume (this build's) must not
// serve the other build's creates.
const beforeStateDir = beforeDist ? await mkdtemp(join(tmpdir(), 'namzu-bench-before-')) : undefined
if (beforeStateDir) await chmod(beforeStateDir, 0o711)
const before = beforeDist
	? (await import(pathToFileURL(join(beforeDist, 'index.js')).href)).createSandboxProvider({
			backend: { tier: 'process', stateDir: beforeStateDir },
		})
	: undefined
const cold = createSandboxProvider({ backend: { tier: 'process' } })
const samples = { baseline: [], cold: [], allowAll: [], before: [], plumbing: [] }
try {
	for (let i = 0; i < 3; i++) {
		await baselineOnce()
		await acquireOnce(cold)
		await acquireOnce(cold, ALLOW_ALL)
		if (before) await acquireOnce(before)
		await slirpAndGuardOnce(plumbingCommand)
	}
	for (let i = 0; i < count; i++) {
		samples.baseline.push(await baselineOnce())
		samples.cold.push(await acquireOnce(cold))
		samples.allowAll.push(await acquireOnce(cold, ALLOW_ALL))
		if (before) samples.before.push(await acquireOnce(before))
		samples.plumbing.push(await slirpAndGuardOnce(plumbingCommand))
	}
} finally {
	await cold.close()
	await before?.close()
	await rm(stateDir, { recursive: true, force: true })
	if (beforeStateDir) await rm(beforeStateDir, { recursive: true, force: true })
}
const baseline = summarize(samples.baseline)
const coldStats = summarize(samples.cold)
const allowStats = summarize(samples.allowAll)
const plumbingStats = summarize(samples.plumbing)
const beforeStats = before ? summarize(samples.before) : undefined

// Warm pool: the pool refills in the background between acquires; give it time to refill so each
// sample measures a warm hand-out (the steady state of a host that acquires less often than ~10/s).
const warm = createSandboxProvider({ backend: { tier: 'process', warmPoolSize: 4 } })
const warmSamples = []
const warmCreateSamples = []
const steadySamples = []
const spawnSamples = []
const laterSamples = []
try {
	await new Promise((resolve) => setTimeout(resolve, 1500))
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		const sandbox = await warm.create()
		warmCreateSamples.push(performance.now() - start)
		const result = await sandbox.exec('true')
		warmSamples.push(performance.now() - start)
		if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
		// The same sandbox's second exec, sent at once, and a host spawn, in the same round; then one
		// more exec after a quiet spell (what an agent's next command, seconds later, meets).
		steadySamples.push(await timed(() => sandbox.exec('true')))
		spawnSamples.push(await timed(() => spawnAndWait('true', [])))
		await new Promise((resolve) => setTimeout(resolve, 500))
		laterSamples.push(await timed(() => sandbox.exec('true')))
		await sandbox.destroy()
		await new Promise((resolve) => setTimeout(resolve, 250))
	}
} finally {
	await warm.close()
}
const warmStats = summarize(warmSamples)
const warmCreateStats = summarize(warmCreateSamples)
const steadyStats = summarize(steadySamples)
const spawnStats = summarize(spawnSamples)
const laterStats = summarize(laterSamples)

const TIER = 'local (bubblewrap)'
const FLOOR = { label: 'the same bwrap line running `node -e 0`', p50: baseline.p50 }
recordHeadline({
	figure: "cold `create()` → first `exec('true')`, deny-all",
	tier: TIER,
	path: "`createSandboxProvider({ tier: 'process' }).create()` → `exec('true')` result",
	n: count,
	p50: coldStats.p50,
	baseline: FLOOR,
	aim: '≤ 1.0×',
})
recordHeadline({
	figure: "cold `create()` → first `exec('true')`, allow-all",
	tier: TIER,
	path: 'the same, `egress: allow-all` (slirp4netns + the nft guard)',
	n: count,
	p50: allowStats.p50,
	baseline: FLOOR,
})
recordHeadline({
	figure: "warm `create()` → first `exec('true')`",
	tier: TIER,
	path: '`warmPoolSize: 4`: hand-out → the first exec of a pooled sandbox',
	n: count,
	p50: warmStats.p50,
	baseline: { label: "host `spawn('true')`, same rounds", p50: spawnStats.p50 },
	aim: '≤ 5 ms p50',
})
recordHeadline({
	figure: "its second `exec('true')`, sent at once",
	tier: TIER,
	path: 'the second exec of that pooled sandbox, right after the first result',
	n: count,
	p50: steadyStats.p50,
	baseline: { label: "host `spawn('true')`, same rounds", p50: spawnStats.p50 },
})
recordHeadline({
	figure: "an `exec('true')` after a quiet spell",
	tier: TIER,
	path: 'the same sandbox 500 ms later',
	n: count,
	p50: laterStats.p50,
	baseline: { label: "host `spawn('true')`, same rounds", p50: spawnStats.p50 },
})

printTable(`acquire (n=${count}, cold rows interleaved round by round)`, [
	`bwrap + node -e 0 (baseline)                 p50 ${ms(baseline.p50)}  p95 ${ms(baseline.p95)}`,
	...(beforeStats
		? [
				`before (${beforeDist}) cold deny-all         p50 ${ms(beforeStats.p50)}  p95 ${ms(beforeStats.p95)}  ratio p50 ${ratio(beforeStats.p50, baseline.p50)}`,
				`cold deny-all, this build / that build       p50 ${ratio(coldStats.p50, beforeStats.p50)}`,
			]
		: []),
	`cold deny-all create() → exec('true')         p50 ${ms(coldStats.p50)}  p95 ${ms(coldStats.p95)}  ratio p50 ${ratio(coldStats.p50, baseline.p50)}  p95 ${ratio(coldStats.p95, baseline.p95)}`,
	`cold allow-all create() → exec('true')        p50 ${ms(allowStats.p50)}  p95 ${ms(allowStats.p95)}  ratio p50 ${ratio(allowStats.p50, baseline.p50)}`,
	`allow-all over deny-all (p50 difference)      ${ms(allowStats.p50 - coldStats.p50)}`,
	`slirp4netns ready + nft guard, serially       p50 ${ms(plumbingStats.p50)}  p95 ${ms(plumbingStats.p95)}`,
	`warm create() → exec('true') result           p50 ${ms(warmStats.p50)}  p95 ${ms(warmStats.p95)}  ratio p50 ${ratio(warmStats.p50, baseline.p50)}`,
	`warm create() alone                           p50 ${ms(warmCreateStats.p50)}  p95 ${ms(warmCreateStats.p95)}`,
	`its second exec('true'), sent at once         p50 ${ms(steadyStats.p50)}  p95 ${ms(steadyStats.p95)}`,
	`an exec('true') 500 ms later                  p50 ${ms(laterStats.p50)}  p95 ${ms(laterStats.p95)}`,
	`host spawn('true'), same rounds               p50 ${ms(spawnStats.p50)}  p95 ${ms(spawnStats.p95)}`,
])
