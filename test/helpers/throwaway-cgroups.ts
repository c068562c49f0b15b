/**
 * Throwaway workload cgroups for tests that run the real agent with `NAMZU_AGENT_WORKLOAD_CGROUPS`:
 * a `namzu-test-<id>/work` group in the v1 freezer (per-command) and pids (joined, `pids.max`)
 * hierarchies, or in the unified v2 hierarchy (per-command, `cgroup.kill`), each nested under this
 * process's own group there. The agent is handed directory descriptors of the `work/` groups;
 * `remove()` kills whatever is left in them and removes them. Test-only.
 */
import { randomUUID } from 'node:crypto'
import {
	accessSync,
	closeSync,
	constants,
	existsSync,
	mkdirSync,
	openSync,
	readdirSync,
	readFileSync,
	rmdirSync,
	writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

const CGROUP_ROOT = '/sys/fs/cgroup'

export interface WorkloadCgroupEntry {
	/** The agent's fd number for it (4, 5, …). */
	readonly fd: number
	readonly version: 1 | 2
	readonly perCommand: boolean
	/** The `work/` directory on the host. */
	readonly dir: string
}

export interface ThrowawayCgroups {
	readonly entries: readonly WorkloadCgroupEntry[]
	/** The agent's descriptors 3, 4, … for `startAgent({ extraStdio })`; close after the spawn. */
	readonly extraStdio: readonly ('ignore' | number)[]
	/** `NAMZU_AGENT_WORKLOAD_CGROUPS` for those fds. */
	readonly env: Readonly<Record<string, string>>
	/** The per-command `work/` directory. */
	readonly perCommandDir: string
	/** The pids `work/` directory (v1 only). */
	readonly pidsDir?: string
	/** Names of the `c-<n>` groups currently under the per-command directory. */
	commandGroups(): string[]
	/** Closes this process's descriptors (the agent holds its own once spawned). */
	closeFds(): void
	/** Kills everything still in the groups and removes them. */
	remove(): Promise<void>
}

/** This process's group in a v1 hierarchy (`controller` as in /proc/self/cgroup), or v2's (`''`). */
function ownGroup(controller: string): string | undefined {
	for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
		const [, controllers, path] = line.split(':')
		if (path === undefined || controllers === undefined) continue
		if (controllers.split(',').includes(controller) || (controller === '' && controllers === '')) {
			return path
		}
	}
	return undefined
}

function hierarchyDir(mount: string, controller: string): string | undefined {
	const own = ownGroup(controller)
	const dir = join(CGROUP_ROOT, mount, own ?? '')
	return own !== undefined && existsSync(dir) ? dir : undefined
}

function writable(dir: string): boolean {
	try {
		accessSync(dir, constants.W_OK)
		return true
	} catch {
		return false
	}
}

/** Why the v1 freezer + pids groups cannot be made here; undefined when they can. */
export function v1WorkloadCgroupsSkipReason(): string | undefined {
	if (process.getuid?.() !== 0) return 'creating cgroups needs root'
	for (const controller of ['freezer', 'pids']) {
		const dir = hierarchyDir(controller, controller)
		if (!dir) return `no v1 ${controller} hierarchy mounted`
		if (!writable(dir)) return `the v1 ${controller} group ${dir} is not writable`
	}
	return undefined
}

/** Why a v2 group cannot be made here; undefined when it can. */
export function v2WorkloadCgroupSkipReason(): string | undefined {
	if (process.getuid?.() !== 0) return 'creating cgroups needs root'
	const dir = unifiedDir()
	if (!dir) return 'no cgroup v2 hierarchy mounted'
	return writable(dir) ? undefined : `the v2 group ${dir} is not writable`
}

function unifiedDir(): string | undefined {
	for (const mount of ['unified', '']) {
		const candidate = join(CGROUP_ROOT, mount)
		if (existsSync(join(candidate, 'cgroup.controllers'))) {
			const own = ownGroup('')
			const dir = join(candidate, own ?? '')
			return existsSync(dir) ? dir : undefined
		}
	}
	return undefined
}

function openDirectory(dir: string): number {
	return openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
}

function membersOf(dir: string): number[] {
	try {
		return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
			.split('\n')
			.filter((line) => /^\d+$/.test(line))
			.map(Number)
	} catch {
		return []
	}
}

/** Kills every member of `dir` (freezing first on the v1 freezer) and removes it, children first. */
async function destroyGroup(dir: string): Promise<void> {
	if (!existsSync(dir)) return
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		if (entry.isDirectory()) await destroyGroup(join(dir, entry.name))
	}
	const freezer = join(dir, 'freezer.state')
	const hasFreezer = existsSync(freezer)
	for (let attempt = 0; attempt < 200; attempt++) {
		if (hasFreezer) writeFileSync(freezer, 'FROZEN')
		const members = membersOf(dir)
		for (const pid of members) {
			try {
				process.kill(pid, 'SIGKILL')
			} catch {
				// Gone.
			}
		}
		if (hasFreezer) writeFileSync(freezer, 'THAWED')
		if (members.length === 0) {
			try {
				rmdirSync(dir)
				return
			} catch {
				// Still busy for a moment.
			}
		}
		await delay(10)
	}
	throw new Error(`could not remove the test cgroup ${dir}`)
}

/** Agent fd number → this process's descriptor, as the stdio entries 3, 4, … (gaps closed). */
export function stdioFrom(fds: Readonly<Record<number, number>>): ('ignore' | number)[] {
	const stdio: ('ignore' | number)[] = []
	for (const [at, fd] of Object.entries(fds)) {
		const index = Number(at) - 3
		while (stdio.length <= index) stdio.push('ignore')
		stdio[index] = fd
	}
	return stdio
}

export interface ThrowawayOptions {
	/** `v1` (freezer per-command + pids joined, default) or `v2` (unified per-command). */
	readonly version?: 1 | 2
	/** v1: `pids.max` of the pids `work/` group (default 256). */
	readonly pidsMax?: number
	/** Extra join-only entries (e.g. a fake group to make a join fail), after the real ones. */
	readonly extraJoinDirs?: readonly string[]
}

export function makeThrowawayCgroups(options: ThrowawayOptions = {}): ThrowawayCgroups {
	const name = `namzu-test-${randomUUID().slice(0, 12)}`
	const tops: string[] = []
	const entries: WorkloadCgroupEntry[] = []
	const version = options.version ?? 1
	const makeWork = (parent: string): string => {
		const top = join(parent, name)
		mkdirSync(top)
		tops.push(top)
		const work = join(top, 'work')
		mkdirSync(work)
		return work
	}
	let pidsDir: string | undefined
	let perCommandDir: string
	if (version === 1) {
		const pidsParent = hierarchyDir('pids', 'pids')
		const freezerParent = hierarchyDir('freezer', 'freezer')
		if (!pidsParent || !freezerParent) throw new Error('no v1 pids/freezer hierarchy')
		pidsDir = makeWork(pidsParent)
		writeFileSync(join(pidsDir, 'pids.max'), String(options.pidsMax ?? 256))
		perCommandDir = makeWork(freezerParent)
		entries.push({ fd: 4, version: 1, perCommand: false, dir: pidsDir })
		entries.push({ fd: 5, version: 1, perCommand: true, dir: perCommandDir })
	} else {
		const parent = unifiedDir()
		if (!parent) throw new Error('no cgroup v2 hierarchy')
		perCommandDir = makeWork(parent)
		entries.push({ fd: 4, version: 2, perCommand: true, dir: perCommandDir })
	}
	for (const dir of options.extraJoinDirs ?? []) {
		entries.push({ fd: 4 + entries.length, version: 1, perCommand: false, dir })
	}
	const opened = entries.map((entry) => [entry.fd, openDirectory(entry.dir)] as const)
	let fdsOpen = true
	const closeFds = () => {
		if (!fdsOpen) return
		fdsOpen = false
		for (const [, fd] of opened) closeSync(fd)
	}
	return {
		entries,
		extraStdio: stdioFrom(Object.fromEntries(opened)),
		env: {
			NAMZU_AGENT_WORKLOAD_CGROUPS: JSON.stringify(
				entries.map(({ fd, version: v, perCommand }) => ({ fd, version: v, perCommand })),
			),
		},
		perCommandDir,
		...(pidsDir === undefined ? {} : { pidsDir }),
		commandGroups: () =>
			readdirSync(perCommandDir, { withFileTypes: true })
				.filter((entry) => entry.isDirectory() && /^c-\d+$/.test(entry.name))
				.map((entry) => entry.name),
		closeFds,
		remove: async () => {
			closeFds()
			for (const top of tops) await destroyGroup(top)
		},
	}
}

/** Live (non-zombie) processes whose command line contains `marker`, never this process. */
export function processesWithMarker(marker: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		try {
			const status = readFileSync(`/proc/${entry}/status`, 'utf8')
			if (/^State:\s+[ZX]/m.test(status)) continue
			const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
			if (cmdline.includes(marker)) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/** A `sleep` duration no other process uses, so its command line marks the test's processes. */
export function markerSleep(): string {
	return `1000.${Math.floor(Math.random() * 1e9)
		.toString()
		.padStart(9, '1')}`
}
