// The egress proxy's cost, against a direct connection measured in the same run: connect + first
// byte per connection and bulk throughput, (a) through the host proxy's unix socket (CONNECT),
// (b) end to end from inside a local sandbox under a `static` policy (capture helper → bridge →
// proxy), (c) the same from inside a runc container, and (d) from an `allow-all` runc container
// (slirp4netns), each against the same client program dialing the upstream directly from the
// host. The upstream runs in a network namespace at a public test address (root; skipped
// otherwise). The container rows need the guest image (`npm run image:build -- --rootfs-only`)
// and runc; without them they are left out and said so.
// Then (e) a slowloris: 256 tunnels each holding a ~44 KiB unfinished request head and trickling
// one more byte every 10 ms; the CPU the proxy's process spends on them over a window, as a
// fraction of one core, against the same clients trickling into a server that only reads and
// discards (the cost of receiving those bytes at all), measured in the same run.
// `node bench/egress-proxy.mjs [--count 200] [--only slowloris] [--trickle-ms 10]`
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
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : ''
const SLOWLORIS_TUNNELS = 256
const SLOWLORIS_WINDOW_MS = 10_000
const trickleArg = process.argv.indexOf('--trickle-ms')
const TRICKLE_INTERVAL_MS = trickleArg > 0 ? Number(process.argv[trickleArg + 1]) : 10

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
			{
				kind: 'static',
				allowedHosts: ['tcp://bench.example.test:5432', 'tcp://bench.example.test:9000'],
			},
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

// The slowloris clients: N tunnels through the socket, each a CONNECT, then an unfinished request
// head of eleven 4000-byte fields, then one byte per tick on every tunnel until killed. Prints
// `ready` once every head is in flight.
const SLOWLORIS_CLIENT = `
const net = require('node:net')
const [socketPath, name, n, interval] = process.argv.slice(1)
const pad = 'a'.repeat(4000)
let head = 'GET / HTTP/1.1\\r\\nHost: ' + name + '\\r\\n'
for (let i = 0; i < 11; i++) head += 'X-Pad-' + i + ': ' + pad + '\\r\\n'
head += 'X-Trickle: '
const open = () => new Promise((resolve, reject) => {
	const s = net.connect(socketPath)
	s.on('error', reject)
	s.once('connect', () => s.write('CONNECT ' + name + ':80 HTTP/1.1\\r\\n\\r\\n'))
	s.once('data', (d) => {
		if (!String(d).startsWith('HTTP/1.1 200')) return reject(new Error(String(d)))
		s.write(head, () => resolve(s))
	})
})
;(async () => {
	const sockets = []
	for (let i = 0; i < Number(n); i++) sockets.push(await open())
	let closed = 0
	for (const s of sockets) s.on('close', () => { closed++ })
	console.log('ready')
	let sent = 0
	setInterval(() => { for (const s of sockets) if (!s.destroyed) { s.write('a'); sent++ } }, Number(interval))
	setInterval(() => console.log('sent ' + sent + ' closed ' + closed), 500)
})().catch((e) => { console.log('error ' + e.message); process.exit(1) })
`

/** CPU of this process (the server under test) while the clients trickle, as a fraction of a core. */
async function slowlorisCost(socketPath) {
	const child = spawn(
		process.execPath,
		[
			'-e',
			SLOWLORIS_CLIENT,
			socketPath,
			'bench.example.test',
			String(SLOWLORIS_TUNNELS),
			String(TRICKLE_INTERVAL_MS),
		],
		{ stdio: ['ignore', 'pipe', 'inherit'] },
	)
	let closed = 0
	let sent = 0
	try {
		await new Promise((resolve, reject) => {
			child.stdout.on('data', (d) => {
				const text = String(d)
				if (text.includes('ready')) resolve()
				if (text.includes('error')) reject(new Error(text))
				const match = /sent (\d+) closed (\d+)/.exec(text)
				if (match) [sent, closed] = [Number(match[1]), Number(match[2])]
			})
			child.once('exit', () => reject(new Error('slowloris client exited')))
		})
		await new Promise((resolve) => setTimeout(resolve, 1000))
		const before = process.cpuUsage()
		const start = performance.now()
		const sentBefore = sent
		await new Promise((resolve) => setTimeout(resolve, SLOWLORIS_WINDOW_MS))
		const used = process.cpuUsage(before)
		const wall = (performance.now() - start) * 1000
		return {
			core: (used.user + used.system) / wall,
			closed,
			bytesPerSecond: ((sent - sentBefore) * 1e6) / wall,
		}
	} finally {
		child.kill('SIGKILL')
	}
}

/** A server that only answers the CONNECT and then reads and discards: the cost floor. */
async function discardServer(socketPath) {
	const { createServer } = await import('node:net')
	const sockets = new Set()
	const server = createServer((socket) => {
		sockets.add(socket)
		socket.on('error', () => {})
		socket.on('close', () => sockets.delete(socket))
		socket.once('data', () => {
			socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
			socket.on('data', () => {})
		})
	})
	await new Promise((resolve) => server.listen(socketPath, resolve))
	return {
		close: () =>
			new Promise((resolve) => {
				for (const socket of sockets) socket.destroy()
				server.close(resolve)
			}),
	}
}

async function slowloris(lookup) {
	const rows = []
	for (let round = 0; round < 2; round++) {
		const basePath = join(dir, `discard-${round}.sock`)
		const base = await discardServer(basePath)
		const baseline = await slowlorisCost(basePath)
		await base.close()
		const proxy = await startEgressProxy({
			socketPath: join(dir, `slowloris-${round}.sock`),
			rules: parseAllowedHosts(['bench.example.test']),
			lookup,
			// The window measures parsing, not the head timeout: it must outlast the window.
			headTimeoutMs: 600_000,
		})
		const measured = await slowlorisCost(proxy.socketPath)
		await proxy.close()
		rows.push({ baseline, measured })
	}
	console.log(
		`\n## egress proxy slowloris (${SLOWLORIS_TUNNELS} tunnels, a ~44 KiB unfinished head each, +1 byte per tunnel every ${TRICKLE_INTERVAL_MS} ms, ${SLOWLORIS_WINDOW_MS / 1000} s window)\n`,
	)
	console.log(
		'| round | CPU of a core: discard server (baseline) | proxy | ratio | proxy minus baseline | bytes trickled / s: baseline, proxy | CPU per trickled byte: baseline, proxy | ratio |',
	)
	console.log('|---|---|---|---|---|---|---|---|')
	rows.forEach(({ baseline, measured }, round) => {
		const pct = (value) => `${(value * 100).toFixed(1)} %`
		const perByte = (run) => (run.core * 1e6) / run.bytesPerSecond
		const closed = measured.closed > 0 ? ` (${measured.closed} tunnels closed)` : ''
		console.log(
			`| ${round + 1} | ${pct(baseline.core)} | ${pct(measured.core)}${closed} | ${ratio(measured.core, baseline.core)} | ${pct(measured.core - baseline.core)} | ${baseline.bytesPerSecond.toFixed(0)}, ${measured.bytesPerSecond.toFixed(0)} | ${perByte(baseline).toFixed(1)} µs, ${perByte(measured).toFixed(1)} µs | ${ratio(perByte(measured), perByte(baseline))} |`,
		)
	})
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
	if (only !== 'slowloris') await connectionRows(lookup)
	await slowloris(lookup)
} finally {
	await cleanup()
}

/** (a)–(d): connection setup and throughput, through every path, against direct runs. */
async function connectionRows(lookup) {
	const proxy = await startEgressProxy({
		socketPath: join(dir, 'proxy.sock'),
		rules: parseAllowedHosts(['tcp://bench.example.test:5432', 'tcp://bench.example.test:9000']),
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
			allowedHosts: ['tcp://bench.example.test:5432', 'tcp://bench.example.test:9000'],
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
}
