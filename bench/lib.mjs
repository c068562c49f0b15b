// Shared benchmark helpers: every benchmark reports a ratio against a baseline measured in the
// same run, because these machines are noisy and absolute numbers do not travel.
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'

export function percentile(samples, p) {
	const sorted = [...samples].sort((a, b) => a - b)
	if (sorted.length === 0) return Number.NaN
	const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
	return sorted[index]
}

export function summarize(samples) {
	return { n: samples.length, p50: percentile(samples, 50), p95: percentile(samples, 95) }
}

export function ms(value) {
	return `${value.toFixed(2)} ms`
}

export function ratio(value, baseline) {
	return `${(value / baseline).toFixed(2)}×`
}

/** Times `fn` `count` times sequentially (after `warmup` untimed runs); returns milliseconds. */
export async function timeEach(count, fn, warmup = 3) {
	for (let i = 0; i < warmup; i++) await fn(i)
	const samples = []
	for (let i = 0; i < count; i++) {
		const start = performance.now()
		await fn(i)
		samples.push(performance.now() - start)
	}
	return samples
}

export function spawnAndWait(command, args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { stdio: 'ignore', ...options })
		child.on('error', reject)
		child.on('exit', (code, signal) => {
			if (code === 0) resolve()
			else reject(new Error(`${command} exited ${code ?? signal}`))
		})
	})
}

/**
 * Imports TypeScript from the repository (the cluster harness, the backends) into a benchmark
 * script under plain Node: esbuild bundles `exportLines` (`export { x } from './test/….ts'`, paths
 * from the repository root; npm packages stay external) into a temporary module next to this file,
 * which is imported and removed.
 */
export async function importTypeScript(name, exportLines) {
	const { rmSync } = await import('node:fs')
	const { dirname, join } = await import('node:path')
	const { fileURLToPath, pathToFileURL } = await import('node:url')
	const { build } = await import('esbuild')
	const here = dirname(fileURLToPath(import.meta.url))
	const bundle = join(here, `.${name}.${process.pid}.bundle.mjs`)
	try {
		await build({
			stdin: {
				contents: exportLines.join('\n'),
				resolveDir: join(here, '..'),
				sourcefile: `${name}-entry.ts`,
				loader: 'ts',
			},
			outfile: bundle,
			bundle: true,
			platform: 'node',
			format: 'esm',
			target: 'node20',
			packages: 'external',
			logLevel: 'warning',
			banner: {
				js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
			},
		})
		return await import(pathToFileURL(bundle).href)
	} finally {
		rmSync(bundle, { force: true })
	}
}

/**
 * Hands one figure to `npm run bench` (bench/headline.mjs), which sets `NAMZU_BENCH_HEADLINE_FILE`
 * and writes the headline table of BENCHMARKS.md from them; a no-op when a bench runs alone.
 * `tier` and `path` name what was measured (a bench on a bare agent says so in `tier`);
 * `baseline` is the same-run figure the ratio is taken against.
 * @param {{ figure: string, tier: string, path: string, n: number, p50: number, unit?: string,
 *   baseline?: { label: string, p50: number }, aim?: string }} figure
 */
export function recordHeadline(figure) {
	const file = process.env.NAMZU_BENCH_HEADLINE_FILE
	if (file) appendFileSync(file, `${JSON.stringify(figure)}\n`)
}

/** The host's durable write: `fs.writeFile` of `body` to `path`, then `fsync`. */
export async function durableWrite(path, body) {
	const { open } = await import('node:fs/promises')
	const handle = await open(path, 'w')
	try {
		await handle.writeFile(body)
		await handle.sync()
	} finally {
		await handle.close()
	}
}

export function printTable(title, rows) {
	console.log(`\n## ${title}`)
	for (const row of rows) console.log(`  ${row}`)
}

export function argInt(name, fallback) {
	const index = process.argv.indexOf(`--${name}`)
	if (index === -1) return fallback
	const value = Number(process.argv[index + 1])
	if (!Number.isSafeInteger(value) || value <= 0)
		throw new Error(`--${name} needs a positive integer`)
	return value
}

// ---- Issue 3 helpers: load the library, run a plain agent, read its memory ----

/**
 * The tier-building entry under measurement (`@namzu/sandbox/agent`): `../dist/agent-entry.js`
 * (what `npm run bench` builds), or the module named by `NAMZU_BENCH_LIB` (e.g. an esbuild bundle
 * of `src/agent-entry.ts`).
 */
export async function loadLibrary() {
	const override = process.env.NAMZU_BENCH_LIB
	return import(override ? new URL(`file://${override}`).href : '../dist/agent-entry.js')
}

/** `VmRSS` and `VmHWM` (bytes) of a process, from `/proc/<pid>/status`. */
export async function processMemory(pid) {
	const { readFile } = await import('node:fs/promises')
	const status = await readFile(`/proc/${pid}/status`, 'utf8')
	const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024
	return { rss: field('VmRSS'), hwm: field('VmHWM') }
}

/** Resets a process's peak RSS (`VmHWM`) to its current RSS (Linux ≥ 4.0, same uid). */
export async function resetPeakRss(pid) {
	const { writeFile } = await import('node:fs/promises')
	await writeFile(`/proc/${pid}/clear_refs`, '5')
}

/**
 * The pid of the one local-tier agent (`<runtime>/agent.cjs` run by its node) among this
 * process's descendants: the sandbox a bench created (bubblewrap's children stay ours). Throws
 * unless exactly one is found, so a figure is never read from another sandbox's agent.
 */
export async function sandboxAgentPid() {
	const { readFile, readdir } = await import('node:fs/promises')
	const processes = []
	for (const entry of await readdir('/proc')) {
		if (!/^\d+$/.test(entry)) continue
		try {
			const stat = await readFile(`/proc/${entry}/stat`, 'utf8')
			const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
			const argv = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0')
			processes.push({ pid: Number(entry), ppid, argv })
		} catch {
			// Gone meanwhile.
		}
	}
	const ours = new Set([process.pid])
	for (let grew = true; grew; ) {
		grew = false
		for (const { pid, ppid } of processes) {
			if (!ours.has(pid) && ours.has(ppid)) {
				ours.add(pid)
				grew = true
			}
		}
	}
	const agents = processes.filter(
		({ pid, argv }) =>
			ours.has(pid) && argv.some((arg) => arg.endsWith('/agent.cjs')) && argv[0]?.endsWith('/node'),
	)
	if (agents.length !== 1) throw new Error(`expected one sandbox agent, found ${agents.length}`)
	return agents[0].pid
}

export function mib(bytes) {
	return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/**
 * Starts the bundled agent (`dist/agent.cjs`, or `NAMZU_SANDBOX_AGENT_PATH`) as a plain process on
 * a fresh workspace, listening on a unix socket (default) or on TCP 127.0.0.1 (`tcp: true`, with
 * `NAMZU_AGENT_BIND_TOKEN` in `env`), with extra inherited descriptors `fds`. Resolves once it
 * printed its `listening` line.
 */
export async function startBenchAgent({ env = {}, tcp = false, fds = {} } = {}) {
	const { mkdtemp, mkdir, rm } = await import('node:fs/promises')
	const { tmpdir } = await import('node:os')
	const { join, dirname } = await import('node:path')
	const { fileURLToPath } = await import('node:url')
	const dir = await mkdtemp(join(tmpdir(), 'namzu-bench-agent-'))
	const workspace = join(dir, 'workspace')
	await mkdir(workspace)
	const socketPath = join(dir, 'agent.sock')
	const agentPath =
		process.env.NAMZU_SANDBOX_AGENT_PATH ??
		join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'agent.cjs')
	const child = spawn(process.execPath, [agentPath], {
		env: {
			PATH: process.env.PATH ?? '/usr/bin:/bin',
			HOME: dir,
			NAMZU_SANDBOX_WORKSPACE: workspace,
			...(tcp ? { NAMZU_AGENT_TCP_PORT: '0' } : { NAMZU_AGENT_UNIX_PATH: socketPath }),
			...env,
		},
		// `fds`: agent fd number → this process's descriptor (e.g. NAMZU_AGENT_WORKLOAD_CGROUPS).
		stdio: Object.entries(fds).reduce(
			(stdio, [at, fd]) => {
				while (stdio.length <= Number(at)) stdio.push('ignore')
				stdio[Number(at)] = fd
				return stdio
			},
			['ignore', 'pipe', 'inherit'],
		),
	})
	const port = await new Promise((resolve, reject) => {
		let out = ''
		child.once('exit', (code) => reject(new Error(`agent exited ${code} before listening`)))
		child.stdout.on('data', (chunk) => {
			out += chunk.toString()
			const match = /listening (\{.*\})/.exec(out)
			if (match) resolve(JSON.parse(match[1]).port)
		})
	})
	return {
		pid: child.pid,
		workspace,
		socketPath,
		port,
		handle: tcp ? { kind: 'tcp', host: '127.0.0.1', port } : { kind: 'unix', path: socketPath },
		async stop() {
			if (child.exitCode === null && child.signalCode === null) {
				const exited = new Promise((resolve) => child.once('exit', resolve))
				child.kill('SIGKILL')
				await exited
			}
			await rm(dir, { recursive: true, force: true })
		},
	}
}

/**
 * The guest image's root filesystem for a container-tier bench, or a thrown reason it cannot run:
 * not built, or not root.
 */
export function containerBenchImage() {
	const image = spawnSync(
		process.execPath,
		[join(import.meta.dirname, '..', 'scripts', 'guest-image.mjs'), 'path'],
		{ encoding: 'utf8' },
	).stdout.trim()
	if (image === '')
		throw new Error('the guest image is not built: npm run image:build -- --rootfs-only')
	if (process.getuid() !== 0) throw new Error('the container tier needs root')
	return image
}
