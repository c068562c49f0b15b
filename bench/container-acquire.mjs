// Container tier acquire: create() → first exec('true') result, cold and from a warm pool, against
// two same-run baselines: `runc run /bin/true` on a bundle of the same shape (the guest image's
// root read-only, the same proc/dev/sys/tmpfs mounts, an unprivileged uid, its own namespaces) —
// the floor any runc-based sandbox pays — and the local tier's warm acquire. Then the exec round
// trip of a started container against spawning `true` on the host. Rows run interleaved, round by
// round, so every ratio compares samples taken under the same load. `--runtime crun|runsc` swaps
// the container tier's runtime (the runc baseline stays runc).
import { spawnSync } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { createContainerSandboxProvider } from '../dist/backends/container/index.js'
import { buildOciConfig, containerMounts } from '../dist/backends/container/oci-config.js'
import { runArgv } from '../dist/backends/container/runtime-argv.js'
import { DEFAULT_SANDBOX_UID_RANGE } from '../dist/backends/machine/claims/sandbox-identity.js'
import { resolveSandboxLimits } from '../dist/backends/machine/spec/sandbox-limits.js'
import { createLocalSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, recordHeadline, spawnAndWait, summarize } from './lib.mjs'

const count = argInt('count', 15)
const runtimeIndex = process.argv.indexOf('--runtime')
const runtime = runtimeIndex === -1 ? 'runc' : process.argv[runtimeIndex + 1]
const image = spawnSync(
	process.execPath,
	[join(import.meta.dirname, '..', 'scripts', 'guest-image.mjs'), 'path'],
	{
		encoding: 'utf8',
	},
).stdout.trim()
if (image === '')
	throw new Error('the guest image is not built: npm run image:build -- --rootfs-only')
if (process.getuid() !== 0) throw new Error('the container tier needs root')

const stateDir = await mkdtemp(join(tmpdir(), 'namzu-bench-container-'))
await chmod(stateDir, 0o711)
const layout = { outputs: { source: { type: 'inImage' } } }

/** A bundle of the sandbox's shape running /bin/true (no agent, no bind of the host). */
async function baselineBundle() {
	const dir = join(stateDir, 'baseline')
	await mkdir(dir, { recursive: true })
	const uid = DEFAULT_SANDBOX_UID_RANGE.first + DEFAULT_SANDBOX_UID_RANGE.count - 1
	const mounts = containerMounts({
		tmpfs: resolveSandboxLimits({}, { totalMemoryBytes: totalmem() }).tmpfs,
		owner: { uid, gid: uid },
		runtime: { node: '/dev/null', bundle: '/dev/null' },
		workspace: '/dev/null',
		scaffolds: [],
		binds: [],
	}).filter((mount) => mount.type !== 'bind')
	const config = buildOciConfig({
		rootfs: image,
		hostname: 'namzu-bench',
		user: { uid, gid: uid },
		args: ['/bin/true'],
		env: { PATH: '/usr/bin:/bin' },
		cwd: '/',
		mounts,
		cgroupsPath: 'namzu-bench-baseline',
	})
	await writeFile(join(dir, 'config.json'), JSON.stringify(config))
	return dir
}

function timed(fn) {
	const start = performance.now()
	return fn().then(() => performance.now() - start)
}

/** A provider whose pool refills in the background, and a wait for its next ready member. */
function pooled(make) {
	let ready = 0
	const waiters = []
	const provider = make(() => {
		ready++
		waiters.shift()?.()
	})
	return {
		provider,
		async nextReady() {
			if (ready === 0) await new Promise((resolve) => waiters.push(resolve))
			ready--
		},
	}
}

async function acquire(provider) {
	const sandbox = await provider.create()
	const result = await sandbox.exec('true')
	if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	return sandbox
}

const bundle = await baselineBundle()
const cold = createContainerSandboxProvider({ tier: 'container', runtime, image, stateDir }, layout)
const warm = pooled((onWarmSandboxReady) =>
	createContainerSandboxProvider(
		{ tier: 'container', runtime, image, stateDir, warmPoolSize: 2 },
		layout,
		{},
		{ onWarmSandboxReady },
	),
)
const localWarm = pooled((onWarmSandboxReady) =>
	createLocalSandboxProvider(
		{ tier: 'process', stateDir, warmPoolSize: 2 },
		{},
		{ onWarmSandboxReady },
	),
)

const samples = { runc: [], cold: [], warm: [], local: [], exec: [], spawn: [] }
try {
	for (let round = -2; round < count; round++) {
		const keep = round >= 0
		const runcMs = await timed(() =>
			spawnAndWait(
				...(([program, ...args]) => [program, args])(
					runArgv(
						{ runtime: 'runc', path: '/usr/sbin/runc', stateDir: join(stateDir, 'runc-root') },
						`namzu-bench-${round + 2}`,
						bundle,
					),
				),
			),
		)
		const coldStart = performance.now()
		const coldSandbox = await acquire(cold)
		const coldMs = performance.now() - coldStart
		// The exec round trip, on the cold container while it is up, against a host spawn.
		const execMs = await timed(() => coldSandbox.exec('true'))
		const spawnMs = await timed(() => spawnAndWait('/bin/true', []))
		await coldSandbox.destroy()
		await warm.nextReady()
		const warmStart = performance.now()
		const warmSandbox = await acquire(warm.provider)
		const warmMs = performance.now() - warmStart
		await warmSandbox.destroy()
		await localWarm.nextReady()
		const localStart = performance.now()
		const localSandbox = await acquire(localWarm.provider)
		const localMs = performance.now() - localStart
		await localSandbox.destroy()
		if (!keep) continue
		samples.runc.push(runcMs)
		samples.cold.push(coldMs)
		samples.warm.push(warmMs)
		samples.local.push(localMs)
		samples.exec.push(execMs)
		samples.spawn.push(spawnMs)
	}
} finally {
	await Promise.allSettled([cold.close(), warm.provider.close(), localWarm.provider.close()])
	await rm(stateDir, { recursive: true, force: true })
}

const s = Object.fromEntries(Object.entries(samples).map(([key, value]) => [key, summarize(value)]))
const row = (label, stats, base, baseLabel) =>
	`${label.padEnd(44)} p50 ${ms(stats.p50)}  p95 ${ms(stats.p95)}  ${ratio(stats.p50, base.p50)} of ${baseLabel}`
const TIER = `container (${runtime})`
const RUNC = { label: '`runc run /bin/true`, same bundle shape', p50: s.runc.p50 }
recordHeadline({
	figure: "cold `create()` → first `exec('true')`",
	tier: TIER,
	path: "`createContainerSandboxProvider(…).create()` → `exec('true')` result",
	n: count,
	p50: s.cold.p50,
	baseline: RUNC,
})
recordHeadline({
	figure: "warm `create()` → first `exec('true')`",
	tier: TIER,
	path: '`warmPoolSize: 2`: hand-out → the first exec',
	n: count,
	p50: s.warm.p50,
	baseline: RUNC,
})
recordHeadline({
	figure: "`exec('true')` round trip",
	tier: TIER,
	path: 'the second exec of the cold sandbox',
	n: count,
	p50: s.exec.p50,
	baseline: { label: 'host `spawn(/bin/true)`', p50: s.spawn.p50 },
})
printTable(`container tier (${runtime}) acquire, ${count} interleaved rounds`, [
	`runc run /bin/true (same bundle shape)      p50 ${ms(s.runc.p50)}  p95 ${ms(s.runc.p95)}`,
	`local tier warm create → exec('true')       p50 ${ms(s.local.p50)}  p95 ${ms(s.local.p95)}`,
	row("container cold create → exec('true')", s.cold, s.runc, 'runc run'),
	row("container warm create → exec('true')", s.warm, s.runc, 'runc run'),
	row("container warm create → exec('true')", s.warm, s.local, 'local warm'),
	row("container exec('true') round trip", s.exec, s.spawn, 'host spawn true'),
	`host spawn /bin/true                        p50 ${ms(s.spawn.p50)}  p95 ${ms(s.spawn.p95)}`,
])
