// The egress proxy's cost, against a direct connection measured in the same run: connect + first
// byte per connection and bulk throughput, (a) through the host proxy's unix socket (CONNECT),
// (b) end to end from inside a local sandbox under a `static` policy (capture helper → bridge →
// proxy), (c) the same from inside a runc container, and (d) from an `allow-all` runc container
// (slirp4netns), each against the same client program dialing the upstream directly from the
// host. The upstream runs in a network namespace at a public test address (root; skipped
// otherwise). The container rows need the guest image (`npm run image:build -- --rootfs-only`)
// and runc; without them they are left out and said so.
// `node bench/egress-proxy.mjs [--count 200]`
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllowedHosts } from '../dist/host/egress/allowed-hosts.js'
import { createEgressCa } from '../dist/host/egress/egress-ca.js'
import { startEgressProxy } from '../dist/host/egress/egress-proxy.js'
import { createContainerSandboxProvider, createLocalSandboxProvider } from '../dist/index.js'
import { ms, ratio, summarize } from './lib.mjs'

if (process.getuid?.() !== 0) {
	console.log('egress-proxy: skipped (needs root for the upstream namespace)')
	process.exit(0)
}
const here = dirname(fileURLToPath(import.meta.url))
const countArg = process.argv.indexOf('--count')
const count = countArg > 0 ? Number(process.argv[countArg + 1]) : 200
const BULK_MIB = 64

const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] })
const tag = `b${process.pid % 100000}`
const namespace = `namzu-bench-${tag}`
const [hostSide, address] = ['198.51.100.253', '198.51.100.254']
const dir = await mkdtemp(join(tmpdir(), 'namzu-egress-bench-'))
await chmod(dir, 0o755)
let server
const cleanup = async () => {
	server?.kill('SIGKILL')
	for (const args of [
		['netns', 'del', namespace],
		['link', 'del', `nz${tag}h`],
	]) {
		try {
			ip(...args)
		} catch {}
	}
	await rm(dir, { recursive: true, force: true })
}

// One client program for every path: N sequential connect → write → first byte, then one bulk read.
const CLIENT = `
const net = require('node:net')
const [kind, a, b, n] = process.argv.slice(1)
const open = (port) => kind === 'tcp' ? net.connect(Number(port), a) : net.connect(a)
const connectOnce = (port) => new Promise((resolve, reject) => {
	const start = performance.now()
	const s = open(port)
	let opened = kind === 'tcp'
	s.on('error', reject)
	const go = () => s.write('x')
	if (kind === 'tcp') s.once('connect', go)
	else s.once('connect', () => s.write('CONNECT ' + b + ':' + port + ' HTTP/1.1\\r\\n\\r\\n'))
	s.on('data', (d) => {
		if (!opened) { opened = true; return go() }
		s.destroy()
		resolve(performance.now() - start)
	})
})
;(async () => {
	const samples = []
	for (let i = 0; i < 3; i++) await connectOnce(5432)
	for (let i = 0; i < Number(n); i++) samples.push(await connectOnce(5432))
	// Bulk: the best of three reads (a single one swings with the other tenants of the 2 cores).
	let best = { bytes: 0, seconds: Infinity }
	for (let round = 0; round < 3; round++) {
		const start = performance.now()
		let bytes = 0
		await new Promise((resolve, reject) => {
			const s = open(9000)
			let opened = kind === 'tcp'
			if (kind !== 'tcp') s.once('connect', () => s.write('CONNECT ' + b + ':9000 HTTP/1.1\\r\\n\\r\\n'))
			s.on('data', (d) => {
				if (!opened) { opened = true; const i = d.indexOf('\\r\\n\\r\\n'); bytes += d.length - i - 4; return }
				bytes += d.length
			})
			s.on('end', resolve)
			s.on('error', reject)
		})
		const seconds = (performance.now() - start) / 1000
		if (bytes / seconds > best.bytes / best.seconds) best = { bytes, seconds }
	}
	const { bytes, seconds } = best
	console.log(JSON.stringify({ samples, bytes, seconds }))
})().catch((e) => { console.log(JSON.stringify({ error: String(e) })) })
`

function runClient(args) {
	return new Promise((resolve, reject) => {
		const child = spawn(process.execPath, ['-e', CLIENT, ...args], {
			stdio: ['ignore', 'pipe', 'inherit'],
		})
		let out = ''
		child.stdout.on('data', (d) => {
			out += d
		})
		child.on('exit', () => {
			try {
				resolve(JSON.parse(out))
			} catch (error) {
				reject(error)
			}
		})
	})
}

/** The container tier's rows: a `static` and an `allow-all` runc container, and their baseline. */
async function containerRows(lookup) {
	const image = spawnSync(
		process.execPath,
		[join(here, '..', 'scripts', 'guest-image.mjs'), 'path'],
		{
			encoding: 'utf8',
		},
	).stdout.trim()
	if (image === '') return { skipped: 'the guest image is not built' }
	if (!existsSync('/usr/sbin/runc')) return { skipped: 'runc is not installed' }
	const provider = createContainerSandboxProvider(
		{ tier: 'container', image, stateDir: dir },
		{ outputs: { source: { type: 'inImage' } } },
		{},
		{ egressTestSeam: { lookup } },
	)
	const inside = async (egress, host) => {
		const sandbox = await provider.create({ egress })
		const result = await sandbox.exec('node', ['-e', CLIENT, 'tcp', host, '', String(count)], {
			timeout: 300_000,
		})
		await sandbox.destroy()
		return JSON.parse(result.stdout)
	}
	try {
		const direct = await runClient(['tcp', address, '', String(count)])
		const captured = await inside(
			{ kind: 'static', allowedHosts: ['bench.example.test:5432', 'bench.example.test:9000'] },
			'bench.example.test',
		)
		const open = await inside({ kind: 'allow-all' }, address)
		// What each kind adds to a cold create → first exec, rounds interleaved.
		const kinds = {
			'deny-all': { kind: 'deny-all' },
			'allow-all': { kind: 'allow-all' },
			static: { kind: 'static', allowedHosts: ['bench.example.test'] },
		}
		const creates = Object.fromEntries(Object.keys(kinds).map((name) => [name, []]))
		for (let round = 0; round < 7; round++) {
			for (const [name, egress] of Object.entries(kinds)) {
				const start = performance.now()
				const sandbox = await provider.create({ egress })
				await sandbox.exec('true', [])
				creates[name].push(performance.now() - start)
				await sandbox.destroy()
			}
		}
		return { direct, captured, open, creates }
	} finally {
		await provider.close()
	}
}

function line(label, result, baseline) {
	const s = summarize(result.samples)
	const mibs = result.bytes / 1024 / 1024 / result.seconds
	const base = baseline ? summarize(baseline.samples) : undefined
	const baseMibs = baseline ? baseline.bytes / 1024 / 1024 / baseline.seconds : undefined
	console.log(
		`| ${label} | ${ms(s.p50)} | ${ms(s.p95)} | ${base ? `${ratio(s.p50, base.p50)}, +${ms(s.p50 - base.p50)}` : '1×'} | ${mibs.toFixed(0)} MiB/s | ${baseMibs ? ratio(mibs, baseMibs) : '1×'} |`,
	)
}

try {
	ip('netns', 'add', namespace)
	ip('link', 'add', `nz${tag}h`, 'type', 'veth', 'peer', 'name', `nz${tag}c`)
	ip('link', 'set', `nz${tag}c`, 'netns', namespace)
	ip('addr', 'add', `${hostSide}/30`, 'dev', `nz${tag}h`)
	ip('link', 'set', `nz${tag}h`, 'up')
	ip('-n', namespace, 'addr', 'add', `${address}/30`, 'dev', `nz${tag}c`)
	ip('-n', namespace, 'link', 'set', `nz${tag}c`, 'up')
	ip('-n', namespace, 'link', 'set', 'lo', 'up')
	const ca = createEgressCa('bench')
	const certs = join(dir, 'certs.json')
	await writeFile(certs, JSON.stringify({ 'bench.example.test': ca.leafFor('bench.example.test') }))
	const upstream = join(here, '..', 'test', 'host', 'egress', 'upstream-server.mjs')
	server = spawn('ip', ['netns', 'exec', namespace, process.execPath, upstream, certs, address], {
		stdio: ['ignore', 'pipe', 'inherit'],
	})
	await new Promise((resolve) => server.stdout.once('data', resolve))
	const lookup = async () => [address]
	const proxy = await startEgressProxy({
		socketPath: join(dir, 'proxy.sock'),
		rules: parseAllowedHosts(['bench.example.test:5432', 'bench.example.test:9000']),
		lookup,
	})
	const direct = await runClient(['tcp', address, '', String(count)])
	const viaProxy = await runClient([
		'unix',
		join(dir, 'proxy.sock'),
		'bench.example.test',
		String(count),
	])
	await proxy.close()
	const provider = createLocalSandboxProvider(
		{ tier: 'process', stateDir: dir },
		{},
		{ egressTestSeam: { lookup } },
	)
	const sandbox = await provider.create({
		egress: {
			kind: 'static',
			allowedHosts: ['bench.example.test:5432', 'bench.example.test:9000'],
		},
	})
	const inside = await sandbox.exec(
		'node',
		['-e', CLIENT, 'tcp', 'bench.example.test', '', String(count)],
		{
			timeout: 300_000,
		},
	)
	const captured = JSON.parse(inside.stdout)
	const directAgain = await runClient(['tcp', address, '', String(count)])
	await provider.close()
	const container = await containerRows(lookup)
	console.log(`\n## egress proxy (n = ${count} connections, best of 3 × ${BULK_MIB} MiB bulk)\n`)
	console.log(
		'| path | connect + first byte p50 | p95 | ratio to direct (p50) | throughput | ratio |',
	)
	console.log('|---|---|---|---|---|---|')
	line('direct from the host (baseline)', direct)
	line('through the host proxy socket (CONNECT)', viaProxy, direct)
	line('direct from the host, again (after the sandbox started)', directAgain)
	line('from inside a `static` sandbox (helper → bridge → proxy)', captured, directAgain)
	if (container.skipped) console.log(`\ncontainer rows skipped: ${container.skipped}`)
	else {
		line('direct from the host, before the containers (baseline)', container.direct)
		line(
			'from inside a `static` runc container (helper → bridge → proxy)',
			container.captured,
			container.direct,
		)
		line(
			'from inside an `allow-all` runc container (slirp4netns)',
			container.open,
			container.direct,
		)
		console.log(
			"\n| runc container, cold `create()` → `exec('true')` | p50 | p95 | ratio to deny-all (p50) |",
		)
		console.log('|---|---|---|---|')
		const base = summarize(container.creates['deny-all'])
		for (const [name, samples] of Object.entries(container.creates)) {
			const s = summarize(samples)
			console.log(`| \`${name}\` | ${ms(s.p50)} | ${ms(s.p95)} | ${ratio(s.p50, base.p50)} |`)
		}
	}
} finally {
	await cleanup()
}
