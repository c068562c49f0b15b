// The container tier on a Docker engine (Podman's compatible service, started here on a temporary
// socket): create() → first exec('true') result, cold and from a warm pool, against the same
// engine's own `POST /containers/create` + `start` of /bin/true until its `wait` returns (a container
// of the same shape: the guest image, read-only root, no capabilities, no network), then removed.
// Rows run interleaved round by round, so the ratios compare samples taken under the same load.
// Usage: node bench/docker-create.mjs [--count 10]   (root; npm run build; the guest image loaded:
// tar -C "$(node scripts/guest-image.mjs path)" -c . | podman import - localhost/namzu-sandbox-guest:latest)
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseHardLimits } from '../dist/backends/container/docker/docker-container-body.js'
import { DockerEngineClient } from '../dist/backends/container/docker/docker-engine-client.js'
import { createSandboxProvider } from '../dist/index.js'
import { argInt, ms, printTable, ratio, summarize } from './lib.mjs'

const count = argInt('count', 10)
const image = 'localhost/namzu-sandbox-guest:latest'
if (process.getuid() !== 0) throw new Error('needs root (a rootful Podman service)')

const dir = await mkdtemp(join(tmpdir(), 'namzu-bench-docker-'))
const socketPath = join(dir, 'engine.sock')
const hybrid =
	spawnSync('stat', ['-fc', '%T', '/sys/fs/cgroup']).stdout.toString().trim() !== 'cgroup2fs'
const service = spawn(
	'podman',
	[
		...(hybrid ? ['--runtime', '/usr/sbin/runc'] : []),
		'system',
		'service',
		'--time=0',
		`unix://${socketPath}`,
	],
	{ stdio: 'ignore' },
)
const client = new DockerEngineClient(socketPath)
for (let tries = 0; ; tries++) {
	const up = await stat(socketPath)
		.then(() => client.call({ method: 'GET', path: '/version' }))
		.then(
			() => true,
			() => false,
		)
	if (up) break
	if (tries > 600) throw new Error('podman system service did not come up')
	await sleep(100)
}

const ulimits = parseHardLimits(await readFile('/proc/self/limits', 'utf8'))
async function engineTrue() {
	const started = performance.now()
	const created = await client.json({
		method: 'POST',
		path: '/containers/create',
		json: {
			Image: image,
			Cmd: ['/bin/true'],
			User: '65534:65534',
			HostConfig: {
				ReadonlyRootfs: true,
				CapDrop: ['ALL'],
				SecurityOpt: ['no-new-privileges'],
				NetworkMode: 'none',
				Ulimits: [
					{ Name: 'nofile', Soft: ulimits.nofile, Hard: ulimits.nofile },
					{ Name: 'nproc', Soft: ulimits.nproc, Hard: ulimits.nproc },
				],
			},
		},
	})
	await client.call({ method: 'POST', path: `/containers/${created.Id}/start` })
	const startReturned = performance.now() - started
	await client.json({ method: 'POST', path: `/containers/${created.Id}/wait` })
	const elapsed = performance.now() - started
	await client.call({
		method: 'DELETE',
		path: `/containers/${created.Id}`,
		query: { force: 'true' },
	})
	return { startReturned, elapsed }
}

const layout = { outputs: { source: { type: 'inImage' } } }
const backend = { tier: 'container', runtime: 'docker', image, dockerHost: `unix://${socketPath}` }
const cold = createSandboxProvider({ backend, layout })
const warm = createSandboxProvider({ backend: { ...backend, warmPoolSize: 2 }, layout })

async function acquire(provider) {
	const started = performance.now()
	const sandbox = await provider.create()
	await sandbox.exec('true')
	const elapsed = performance.now() - started
	await sandbox.destroy()
	return elapsed
}

const rows = { engineStart: [], engine: [], cold: [], warm: [] }
try {
	// One of each first, unmeasured: the image's layers and the pool warm up.
	await engineTrue()
	await acquire(cold)
	await acquire(warm)
	for (let round = 0; round < count; round++) {
		const engineRound = await engineTrue()
		rows.engineStart.push(engineRound.startReturned)
		rows.engine.push(engineRound.elapsed)
		rows.cold.push(await acquire(cold))
		await sleep(2000) // the pool refills between its acquires
		rows.warm.push(await acquire(warm))
	}
} finally {
	await cold.close()
	await warm.close()
	service.kill('SIGTERM')
	await new Promise((resolve) => service.once('exit', resolve))
	await rm(dir, { recursive: true, force: true })
}
const engineStart = summarize(rows.engineStart)
const engine = summarize(rows.engine)
const coldStats = summarize(rows.cold)
const warmStats = summarize(rows.warm)
const line = (cells) => `| ${cells.join(' | ')} |`
printTable(`Docker engine (Podman), n = ${count}`, [
	line(['', 'p50', 'p95', 'ratio (p50)']),
	line([
		'engine create + start of /bin/true until start returns',
		ms(engineStart.p50),
		ms(engineStart.p95),
		ratio(engineStart.p50, engine.p50),
	]),
	line([
		'engine create + start of /bin/true until wait returns',
		ms(engine.p50),
		ms(engine.p95),
		'1×',
	]),
	line([
		'docker cold create() → exec(true)',
		ms(coldStats.p50),
		ms(coldStats.p95),
		ratio(coldStats.p50, engine.p50),
	]),
	line([
		'docker warm pool create() → exec(true)',
		ms(warmStats.p50),
		ms(warmStats.p95),
		ratio(warmStats.p50, engine.p50),
	]),
])
