// What per-command cgroups cost an exec: the same plain agent with and without
// NAMZU_AGENT_WORKLOAD_CGROUPS (throwaway v1 freezer + pids groups under this process's own), runs
// interleaved so drift hits both alike; baselines from the same run: host spawn of `true`, and of
// `/bin/sh -c 'exec "$@"' sh true` (the floor of the join prefix's extra exec). Needs root.
import {
	closeSync,
	constants,
	existsSync,
	mkdirSync,
	openSync,
	readFileSync,
	rmdirSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import {
	argInt,
	loadLibrary,
	ms,
	printTable,
	ratio,
	spawnAndWait,
	startBenchAgent,
	summarize,
} from './lib.mjs'

const count = argInt('count', 200)
const { AgentTransport, createAgentSandbox } = await loadLibrary()

function ownGroup(controller) {
	for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
		const [, controllers, path] = line.split(':')
		if (controllers?.split(',').includes(controller)) return path
	}
	return undefined
}

const missing = ['pids', 'freezer'].find(
	(controller) =>
		ownGroup(controller) === undefined || !existsSync(join('/sys/fs/cgroup', controller)),
)
if (process.getuid?.() !== 0 || missing) {
	console.log(
		`\n## exec round trip with per-command cgroups: skipped (${missing ? `no v1 ${missing} hierarchy` : 'needs root'})`,
	)
	process.exit(0)
}

const name = `namzu-bench-${process.pid}`
const tops = ['pids', 'freezer'].map((controller) =>
	join('/sys/fs/cgroup', controller, ownGroup(controller), name),
)
for (const top of tops) mkdirSync(join(top, 'work'), { recursive: true })
writeFileSync(join(tops[0], 'work', 'pids.max'), '1024')
const dirFds = tops.map((top) =>
	openSync(join(top, 'work'), constants.O_RDONLY | constants.O_DIRECTORY),
)

const plain = await startBenchAgent()
const grouped = await startBenchAgent({
	env: {
		NAMZU_AGENT_WORKLOAD_CGROUPS: JSON.stringify([
			{ fd: 4, version: 1, perCommand: false },
			{ fd: 5, version: 1, perCommand: true },
		]),
	},
	fds: { 4: dirFds[0], 5: dirFds[1] },
})
for (const fd of dirFds) closeSync(fd)
// Where each exec's time went (onTiming): the split the exec round trip is judged by.
// `twoStep`: the plain agent again, through a host that keeps the reserve round trip
// (`executeReserves: false`), as the same-run baseline of exec in one round trip.
const timings = { plain: [], twoStep: [], grouped: [] }
let recording = false
const sandboxOf = (agent, key, transportOptions = {}) =>
	createAgentSandbox({
		id: `bench-${agent.pid}-${key}`,
		transport: new AgentTransport(agent.handle, transportOptions),
		rootDir: agent.workspace,
		environment: 'basic',
		release: async () => {},
		execution: {
			onTiming: (timing) => {
				if (recording) timings[key].push(timing)
			},
		},
	})
const sandboxes = {
	plain: sandboxOf(plain, 'plain'),
	twoStep: sandboxOf(plain, 'twoStep', { executeReserves: false }),
	grouped: sandboxOf(grouped, 'grouped'),
}
// As a sandbox's create does: the guest's features are read before the first exec.
for (const sandbox of Object.values(sandboxes)) await sandbox.transport.features()
try {
	const samples = { plain: [], twoStep: [], grouped: [], host: [], hostShell: [] }
	const time = async (list, fn) => {
		const start = performance.now()
		await fn()
		list.push(performance.now() - start)
	}
	const execTrue = (sandbox) => async () => {
		const result = await sandbox.exec('true')
		if (result.exitCode !== 0) throw new Error(`exec true exited ${result.exitCode}`)
	}
	for (let i = 0; i < 5; i++) {
		await execTrue(sandboxes.plain)()
		await execTrue(sandboxes.twoStep)()
		await execTrue(sandboxes.grouped)()
	}
	recording = true
	for (let i = 0; i < count; i++) {
		await time(samples.plain, execTrue(sandboxes.plain))
		await time(samples.twoStep, execTrue(sandboxes.twoStep))
		await time(samples.grouped, execTrue(sandboxes.grouped))
		await time(samples.host, () => spawnAndWait('true', []))
		await time(samples.hostShell, () => spawnAndWait('/bin/sh', ['-c', 'exec "$@"', 'sh', 'true']))
	}
	// What one join costs the kernel: moving a sleeping process between two groups, back to back
	// and with a pause between moves (the pause is what a command stream looks like).
	const migration = await measureMigration(tops[1])
	const stats = Object.fromEntries(
		Object.entries(samples).map(([key, list]) => [key, summarize(list)]),
	)
	printTable('exec round trip with per-command cgroups (plain agent, v1 freezer + pids)', [
		`exec('true'), no cgroups     p50 ${ms(stats.plain.p50)}  p95 ${ms(stats.plain.p95)}  (n=${count})`,
		`exec('true'), two-step host  p50 ${ms(stats.twoStep.p50)}  p95 ${ms(stats.twoStep.p95)}  (one round trip saves ${ms(stats.twoStep.p50 - stats.plain.p50)}, ${ratio(stats.plain.p50, stats.twoStep.p50)})`,
		`exec('true'), per-command    p50 ${ms(stats.grouped.p50)}  p95 ${ms(stats.grouped.p95)}`,
		`ratio grouped / no cgroups   p50 ${ratio(stats.grouped.p50, stats.plain.p50)}  (+${ms(stats.grouped.p50 - stats.plain.p50)})`,
		`host spawn('true')           p50 ${ms(stats.host.p50)}`,
		`host sh -c 'exec "$@"' true  p50 ${ms(stats.hostShell.p50)}  (+${ms(stats.hostShell.p50 - stats.host.p50)} for the extra exec)`,
		`one cgroup.procs move        p50 ${ms(migration.backToBack.p50)} back to back, ${ms(migration.spaced.p50)} 20 ms apart`,
		...['plain', 'twoStep', 'grouped'].map((key) => {
			const p = (field) => ms(summarize(timings[key].map((t) => t[field])).p50)
			return `onExecTiming ${key.padEnd(7)} p50  dial ${p('dialMs')}  reserve ${p('reserveMs')}  execute ${p('executeMs')}  drain ${p('drainMs')}`
		}),
	])
} finally {
	await sandboxes.plain.destroy()
	await sandboxes.twoStep.destroy()
	await sandboxes.grouped.destroy()
	await plain.stop()
	await grouped.stop()
	for (const top of tops) {
		const work = join(top, 'work')
		if (existsSync(work)) rmdirSync(work)
		rmdirSync(top)
	}
}

async function measureMigration(top) {
	const { spawn } = await import('node:child_process')
	const [a, b] = ['move-a', 'move-b'].map((name) => join(top, name))
	for (const dir of [a, b]) mkdirSync(dir)
	const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' })
	await new Promise((resolve) => sleeper.once('spawn', resolve))
	const moves = async (gapMs) => {
		const list = []
		for (let i = 0; i < 40; i++) {
			if (gapMs > 0) await delay(gapMs)
			const start = performance.now()
			writeFileSync(join(i % 2 ? a : b, 'cgroup.procs'), String(sleeper.pid))
			list.push(performance.now() - start)
		}
		return summarize(list)
	}
	try {
		return { backToBack: await moves(0), spaced: await moves(20) }
	} finally {
		sleeper.kill('SIGKILL')
		await new Promise((resolve) => sleeper.once('exit', resolve))
		for (const dir of [a, b]) rmdirSync(dir)
	}
}
