// `npm run cluster:build | cluster:up | cluster:down | cluster:status` (through scripts/run-ts.mjs).
// `up` builds what is missing, ends whatever a crashed previous run left, then starts a detached
// supervisor (`serve`) that holds the cluster — the process kubelet lives in that Node process —
// and returns once `<stateDir>/cluster.json` is written. `down` stops the supervisor (which stops
// every component) and kills anything recorded that is still running.
import { spawn } from 'node:child_process'
import {
	closeSync,
	existsSync,
	mkdirSync,
	openSync,
	readFileSync,
	rmSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { buildClusterBinaries, missingArtifacts } from './build/build-binaries.js'
import { binDir, clusterDir, defaultStateDir, isRecord, repoRoot } from './paths.js'
import { killRecorded } from './pid-registry.js'
import { type ClusterEndpoints, startTestCluster } from './test-cluster.js'

const supervisorMarker = '--namzu-cluster-supervisor'

function option(args: readonly string[], name: string): string | undefined {
	const index = args.indexOf(name)
	if (index >= 0) return args[index + 1]
	const inline = args.find((arg) => arg.startsWith(`${name}=`))
	return inline?.slice(name.length + 1)
}

function supervisorFile(stateDir: string): string {
	return join(stateDir, 'supervisor.json')
}

/** The live supervisor's pid, if the recorded one still runs with our marker on its command line. */
export function liveSupervisor(stateDir: string): number | undefined {
	const file = supervisorFile(stateDir)
	if (!existsSync(file)) return undefined
	const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'))
	if (!isRecord(parsed) || typeof parsed.pid !== 'number') return undefined
	try {
		const cmdline = readFileSync(`/proc/${parsed.pid}/cmdline`, 'utf8').split('\0')
		return cmdline.includes(`${supervisorMarker}=${stateDir}`) ? parsed.pid : undefined
	} catch {
		return undefined
	}
}

function readEndpoints(stateDir: string): ClusterEndpoints | undefined {
	const file = join(stateDir, 'cluster.json')
	if (!existsSync(file)) return undefined
	try {
		return JSON.parse(readFileSync(file, 'utf8')) as ClusterEndpoints
	} catch {
		return undefined
	}
}

function printEndpoints(stateDir: string, endpoints: ClusterEndpoints): void {
	console.log(
		`cluster: up — Kubernetes ${endpoints.versions.kubernetes}, agent-sandbox ${endpoints.versions.agentSandbox}`,
	)
	console.log(`  API server     ${endpoints.server}`)
	console.log(`  fault proxy    ${endpoints.faultProxyServer}`)
	console.log(`  node           ${endpoints.nodeName}`)
	console.log(`  kubeconfig     ${endpoints.kubeconfigPath}`)
	console.log(`  endpoints JSON ${join(stateDir, 'cluster.json')}`)
	console.log(`  logs           ${join(stateDir, 'logs')}`)
	console.log(
		`  try: ${join(binDir(), 'kubectl')} --kubeconfig ${endpoints.kubeconfigPath} get nodes`,
	)
}

async function up(stateDir: string): Promise<number> {
	const started = Date.now()
	if (missingArtifacts().length > 0) await buildClusterBinaries()
	const running = liveSupervisor(stateDir)
	const existing = readEndpoints(stateDir)
	if (running !== undefined && existing !== undefined) {
		console.log(`cluster: already running (supervisor pid ${running})`)
		printEndpoints(stateDir, existing)
		return 0
	}
	await down(stateDir, { quiet: true })
	mkdirSync(join(stateDir, 'logs'), { recursive: true })
	const logPath = join(stateDir, 'logs', 'supervisor.log')
	const logFd = openSync(logPath, 'w')
	const child = spawn(
		process.execPath,
		[
			join(clusterDir(), 'scripts', 'run-ts.mjs'),
			join(clusterDir(), 'cli.ts'),
			'serve',
			'--state-dir',
			stateDir,
			`${supervisorMarker}=${stateDir}`,
		],
		{ cwd: repoRoot(), detached: true, stdio: ['ignore', logFd, logFd] },
	)
	closeSync(logFd)
	child.unref()
	writeFileSync(supervisorFile(stateDir), JSON.stringify({ pid: child.pid }))
	let exited = false
	child.on('exit', () => {
		exited = true
	})
	for (;;) {
		const endpoints = readEndpoints(stateDir)
		if (endpoints !== undefined && endpoints.supervisorPid === child.pid) {
			printEndpoints(stateDir, endpoints)
			console.log(`cluster: start → ready in ${((Date.now() - started) / 1000).toFixed(1)} s`)
			return 0
		}
		if (exited) {
			console.error(`cluster: supervisor exited before the cluster was ready; ${logPath}:`)
			console.error(readFileSync(logPath, 'utf8').split('\n').slice(-40).join('\n'))
			await down(stateDir, { quiet: true })
			return 1
		}
		await new Promise((resolve) => setTimeout(resolve, 200))
	}
}

async function serve(stateDir: string): Promise<number> {
	const cluster = await startTestCluster({
		stateDir,
		keepStateDir: true,
		log: (line) => console.log(line),
	})
	await new Promise<void>((resolve) => {
		process.once('SIGTERM', () => resolve())
		process.once('SIGINT', () => resolve())
	})
	console.log('cluster: stopping')
	await cluster.stop()
	rmSync(join(stateDir, 'cluster.json'), { force: true })
	console.log('cluster: stopped')
	return 0
}

async function down(stateDir: string, options: { quiet?: boolean } = {}): Promise<number> {
	const pid = liveSupervisor(stateDir)
	if (pid !== undefined) {
		process.kill(pid, 'SIGTERM')
		const deadline = Date.now() + 60_000
		while (liveSupervisor(stateDir) !== undefined && Date.now() < deadline) {
			await new Promise((resolve) => setTimeout(resolve, 100))
		}
		if (liveSupervisor(stateDir) !== undefined) process.kill(pid, 'SIGKILL')
	}
	const leftovers = existsSync(stateDir) ? await killRecorded(stateDir) : []
	rmSync(join(stateDir, 'cluster.json'), { force: true })
	rmSync(supervisorFile(stateDir), { force: true })
	if (!options.quiet || leftovers.length > 0) {
		console.log(
			`cluster: down${pid === undefined ? ' (no supervisor was running)' : ''}` +
				(leftovers.length > 0
					? `; ended leftovers: ${leftovers.map((p) => p.name).join(', ')}`
					: ''),
		)
	}
	return 0
}

async function status(stateDir: string): Promise<number> {
	const pid = liveSupervisor(stateDir)
	const endpoints = readEndpoints(stateDir)
	if (pid === undefined || endpoints === undefined) {
		console.log('cluster: not running')
		return 1
	}
	printEndpoints(stateDir, endpoints)
	return 0
}

export async function main(args: readonly string[]): Promise<number> {
	const [command] = args
	const stateDir = option(args, '--state-dir') ?? defaultStateDir()
	switch (command) {
		case 'build': {
			const info = await buildClusterBinaries()
			console.log(
				`cluster: binaries ready — Kubernetes ${info.kubernetes}, etcd ${info.etcd}, ` +
					`agent-sandbox ${info.agentSandbox} in ${binDir()}`,
			)
			return 0
		}
		case 'up':
			return up(stateDir)
		case 'down':
			return down(stateDir)
		case 'status':
			return status(stateDir)
		case 'serve':
			return serve(stateDir)
		default:
			console.error('usage: cluster (build|up|down|status) [--state-dir DIR]')
			return 2
	}
}
