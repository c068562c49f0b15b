import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises'
import { totalmem } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AGENT_TASK_HEADROOM } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	inUidRange,
} from '../../../src/backends/machine/claims/sandbox-identity.js'
import {
	DEFAULT_MAX_PROCESSES,
	defaultMemoryLimitMb,
	tmpfsSizesFor,
} from '../../../src/backends/machine/spec/sandbox-limits.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { GuestDiedError } from '../../../src/host/transport/transport-errors.js'
import { bundleSource, childEnv, type SourceBundle } from '../../helpers/bundle-source.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { allCgroupDirsFor, freshStateDir, useLocalProvider, waitFor } from './local-test-support.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (cgroups)')
const MIB = 1024 * 1024
const run = promisify(execFile)

/** The sandbox's group in the v1 hierarchy `hierarchy` (as this machine has them). */
function groupIn(id: string, hierarchy: string): string {
	const dir = allCgroupDirsFor(id).find((candidate) =>
		candidate.startsWith(`/sys/fs/cgroup/${hierarchy}/`),
	)
	if (dir === undefined) throw new Error(`sandbox ${id} has no ${hierarchy} group`)
	return dir
}

async function readNumber(file: string): Promise<number> {
	return Number((await readFile(file, 'utf8')).trim())
}

/** Host pids (with `comm`) in the sandbox's own pids group, or in `below` it (`work`). */
async function groupProcesses(id: string, below = ''): Promise<{ pid: number; comm: string }[]> {
	const text = await readFile(join(groupIn(id, 'pids'), below, 'cgroup.procs'), 'utf8')
	const found: { pid: number; comm: string }[] = []
	for (const pid of text
		.split('\n')
		.filter((line) => line !== '')
		.map(Number)) {
		found.push({ pid, comm: (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() })
	}
	return found
}

async function agentPid(id: string): Promise<number> {
	const agent = (await groupProcesses(id)).find((entry) => entry.comm === 'node')
	if (!agent) throw new Error('no agent process in the sandbox group')
	return agent.pid
}

/** What each descriptor of `pid` refers to, by number. */
async function descriptorTargets(pid: number): Promise<[number, string][]> {
	const found: [number, string][] = []
	for (const name of await readdir(`/proc/${pid}/fd`)) {
		found.push([Number(name), await readlink(`/proc/${pid}/fd/${name}`).catch(() => '')])
	}
	return found.sort(([a], [b]) => a - b)
}

/**
 * The sandbox's `work/` groups, sorted: what the host hands its agent — pids (the task limit) and
 * freezer (per-command kills), plus memory and cpuacct where this machine mounts them, to count
 * what each command used.
 */
function workDirsOf(id: string): string[] {
	const dirs = [join(groupIn(id, 'freezer'), 'work'), join(groupIn(id, 'pids'), 'work')]
	for (const counting of ['memory', 'cpuacct']) {
		const group = allCgroupDirsFor(id).find((dir) => dir.startsWith(`/sys/fs/cgroup/${counting}/`))
		if (group !== undefined) dirs.push(join(group, 'work'))
	}
	return dirs.sort()
}

/** The directories among the descriptors of `pid`, sorted. */
async function workDescriptorsOf(pid: number): Promise<string[]> {
	const targets = await descriptorTargets(pid)
	return targets
		.map(([, target]) => target)
		.filter((target) => target.startsWith('/sys/fs/cgroup/'))
		.sort()
}

/**
 * Waits until the agent holds no cgroup file beyond its `work/` directories: while it starts the
 * next command ahead it holds that command's `cgroup.procs` files, only for the spawn.
 */
async function settledDescriptors(pid: number, workDirs: number): Promise<void> {
	for (let tries = 0; tries < 500; tries++) {
		const held = (await descriptorTargets(pid)).filter(([, target]) =>
			target.startsWith('/sys/fs/cgroup/'),
		)
		if (held.length <= workDirs) return
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

/** The real uid of `pid` on the host. */
async function hostUidOf(pid: number): Promise<number> {
	const status = await readFile(`/proc/${pid}/status`, 'utf8')
	return Number(/^Uid:\s+(\d+)/m.exec(status)?.[1])
}

/** `size=` of each tmpfs mount as the sandbox sees it, in bytes. */
async function tmpfsSizesInside(sandbox: Sandbox): Promise<Record<string, number>> {
	const mounts = (await sandbox.exec('cat', ['/proc/self/mounts'])).stdout
	const sizes: Record<string, number> = {}
	for (const line of mounts.split('\n')) {
		const [, mountPoint, type, options] = line.split(' ')
		const size = /(?:^|,)size=(\d+)k/.exec(options ?? '')?.[1]
		if (type === 'tmpfs' && mountPoint && size) sizes[mountPoint] = Number(size) * 1024
	}
	return sizes
}

describe.skipIf(skip !== undefined)(
	`a sandbox is bounded by default${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()

		it('with no options it has a memory limit, a task limit, a cpu share and sized tmpfs mounts', async () => {
			const sandbox = await file.provider.create()
			try {
				const memory = groupIn(sandbox.id, 'memory')
				const pids = groupIn(sandbox.id, 'pids')
				const expectedMb = defaultMemoryLimitMb(totalmem())
				expect(await readNumber(join(memory, 'memory.limit_in_bytes'))).toBe(expectedMb * MIB)
				expect(await readNumber(join(pids, 'pids.max'))).toBe(
					DEFAULT_MAX_PROCESSES + AGENT_TASK_HEADROOM,
				)
				expect(await readNumber(join(pids, 'work', 'pids.max'))).toBe(DEFAULT_MAX_PROCESSES)
				expect(await readNumber(join(groupIn(sandbox.id, 'cpu'), 'cpu.shares'))).toBe(1024)
				expect(await readNumber(join(groupIn(sandbox.id, 'cpu'), 'cpu.cfs_quota_us'))).toBe(-1)
				const planned = tmpfsSizesFor(expectedMb)
				expect(await tmpfsSizesInside(sandbox)).toMatchObject({
					'/tmp': planned['/tmp'],
					'/run': planned['/run'],
					'/var/tmp': planned['/var/tmp'],
					'/dev/shm': planned['/dev/shm'],
				})
				// The positive control: ordinary work is unaffected.
				const work = await sandbox.exec('sh', ['-c', 'echo ok > /tmp/a && cat /tmp/a && node -e 0'])
				expect(work).toMatchObject({ exitCode: 0, stdout: 'ok\n' })
			} finally {
				await sandbox.destroy()
			}
		})

		it('hands the agent its work/ groups as descriptors from 4 on, described by one variable', async () => {
			const sandbox = await file.provider.create()
			try {
				const agent = await agentPid(sandbox.id)
				// Handed over as 4, 5, … (the variable), which the agent re-opens close-on-exec.
				const dirs = workDirsOf(sandbox.id)
				await settledDescriptors(agent, dirs.length)
				expect(await workDescriptorsOf(agent)).toEqual(dirs)
				const environ = (await readFile(`/proc/${agent}/environ`, 'utf8')).split('\0')
				const prefix = 'NAMZU_AGENT_WORKLOAD_CGROUPS='
				const described = JSON.parse(
					environ.find((entry) => entry.startsWith(prefix))?.slice(prefix.length) ?? '[]',
				) as { fd: number; version: number; perCommand: boolean; accounting?: boolean }[]
				const fds = dirs.map((_, index) => 4 + index)
				expect(described.map((entry) => entry.fd)).toEqual(fds)
				expect(described.every((entry) => entry.version === 1)).toBe(true)
				// One directory for per-command groups (freezer), one limit group (pids), the rest count.
				expect(described.filter((entry) => entry.perCommand)).toHaveLength(1)
				const counting = dirs.filter((dir) => /^\/sys\/fs\/cgroup\/(memory|cpuacct)\//.test(dir))
				expect(described.filter((entry) => entry.accounting === true)).toHaveLength(counting.length)
				expect(environ).toContain(`NAMZU_AGENT_INHERITED_FDS=${[3, ...fds].join(',')}`)
				// The work/ groups belong to the uid the sandbox runs as on the host: its own on a root
				// host, never root's.
				const sandboxUid = await hostUidOf(agent)
				if (process.getuid?.() === 0)
					expect(inUidRange(sandboxUid, DEFAULT_SANDBOX_UID_RANGE)).toBe(true)
				for (const hierarchy of ['pids', 'freezer']) {
					const owner = await stat(join(groupIn(sandbox.id, hierarchy), 'work'))
					expect(owner.uid).toBe(sandboxUid)
					const procs = await stat(join(groupIn(sandbox.id, hierarchy), 'work', 'cgroup.procs'))
					expect(procs.uid).toBe(sandboxUid)
				}
				// A command holds only its stdio (3 is the directory ls itself lists).
				const listing = await sandbox.exec('ls', ['/proc/self/fd'])
				expect(listing.stdout.trim().split('\n').sort()).toEqual(['0', '1', '2', '3'])
				const probe = await sandbox.exec('sh', [
					'-c',
					`readlink ${fds.map((fd) => `/proc/self/fd/${fd}`).join(' ')}`,
				])
				expect(probe.stdout).toBe('')
				// The workload never sees the variable (the agent scrubs NAMZU_* from children).
				expect((await sandbox.exec('env')).stdout).not.toContain('NAMZU_AGENT_WORKLOAD_CGROUPS')
			} finally {
				await sandbox.destroy()
			}
		})

		it.each(['deny-all', 'allow-all'] as const)(
			'under %s the agent holds the listener and its work/ groups, never bwrap’s own descriptors',
			async (kind) => {
				const sandbox = await file.provider.create({ egress: { kind } })
				try {
					const agent = await agentPid(sandbox.id)
					await settledDescriptors(agent, workDirsOf(sandbox.id).length)
					const targets = await descriptorTargets(agent)
					// No socket bwrap holds beyond stdio and the listener (allow-all's info and lifetime
					// socket pairs) is the agent's too.
					const bwrapSockets = new Set<string>()
					for (const entry of await groupProcesses(sandbox.id)) {
						if (entry.comm !== 'bwrap') continue
						for (const [fd, target] of await descriptorTargets(entry.pid)) {
							if (fd > 3 && target.startsWith('socket:')) bwrapSockets.add(target)
						}
					}
					if (kind === 'allow-all') expect(bwrapSockets.size).toBeGreaterThan(0)
					expect(targets.filter(([, target]) => bwrapSockets.has(target))).toEqual([])
					const paths = targets.filter(([, t]) => t.startsWith('/') && t !== '/dev/null')
					expect(paths.map(([, target]) => target).sort()).toEqual(workDirsOf(sandbox.id))
				} finally {
					await sandbox.destroy()
				}
			},
		)

		it('teardown kills and removes per-command groups the agent left, frozen ones included', async () => {
			const sandbox = await file.provider.create()
			const id = sandbox.id
			const controller = new AbortController()
			let pid = 0
			const running = sandbox
				.exec('sleep', ['30'], { signal: controller.signal })
				.catch(() => undefined)
			try {
				// This sandbox's own sleep, which the agent put in work/ (pids) and a per-command group
				// of its own under freezer work/.
				let sleeper: { pid: number; comm: string } | undefined
				for (let tries = 0; sleeper === undefined && tries < 500; tries++) {
					sleeper = (await groupProcesses(id, 'work')).find((entry) => entry.comm === 'sleep')
					if (sleeper === undefined) await new Promise((resolve) => setTimeout(resolve, 20))
				}
				if (!sleeper) throw new Error('sleep did not start')
				const freezerWork = join(groupIn(id, 'freezer'), 'work')
				const own = (await readdir(freezerWork, { withFileTypes: true }))
					.filter((entry) => entry.isDirectory())
					.map((entry) => join(freezerWork, entry.name))
				expect(own).toHaveLength(1)
				const command = own[0] ?? ''
				expect(await readFile(join(command, 'cgroup.procs'), 'utf8')).toContain(String(sleeper.pid))
				// Left frozen (an agent killed mid-cancel): teardown must thaw it to kill what is inside.
				await writeFile(join(command, 'freezer.state'), 'FROZEN')
				// The command is also counted in a group of its own under each counting hierarchy.
				const memory = allCgroupDirsFor(id).find((dir) => dir.startsWith('/sys/fs/cgroup/memory/'))
				if (memory !== undefined) {
					const counted = (await readdir(join(memory, 'work'), { withFileTypes: true })).filter(
						(entry) => entry.isDirectory(),
					)
					expect(counted).toHaveLength(1)
				}
				pid = sleeper.pid
			} finally {
				await sandbox.destroy()
				controller.abort()
				await running
			}
			expect(allCgroupDirsFor(id)).toEqual([])
			await waitFor(() => !existsSync(`/proc/${pid}`))
		})

		it('maxProcesses: 64 means 64 tasks for the workload: 63 children + itself, then the next fork fails', async () => {
			const sandbox = await file.provider.create({ maxProcesses: 64 })
			try {
				const counter = `
import os, sys, time
while 'pids:/work' not in open('/proc/self/cgroup').read(): time.sleep(0.02)
kids = []
try:
    while len(kids) < 200:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as error:
    print('forked', len(kids), 'then', error.errno)
for kid in kids:
    os.kill(kid, 9)
`
				// The agent puts every command in work/ before it runs (the loop only confirms it).
				const result = await sandbox.exec('python3', ['-c', counter], { timeout: 20_000 })
				expect(result.stdout.trim()).toBe('forked 63 then 11')
			} finally {
				await sandbox.destroy()
			}
		})

		it('cpuLimit holds a busy workload to its share of the cgroup usage counter', async () => {
			const sandbox = await file.provider.create({ cpuLimit: 0.5 })
			try {
				expect(await readNumber(join(groupIn(sandbox.id, 'cpu'), 'cpu.cfs_quota_us'))).toBe(50_000)
				const usage = join(groupIn(sandbox.id, 'cpuacct'), 'cpuacct.usage')
				const busy =
					'timeout 2 sh -c "while :; do :; done" & timeout 2 sh -c "while :; do :; done" & wait'
				const before = await readNumber(usage)
				const start = process.hrtime.bigint()
				await sandbox.exec('sh', ['-c', busy])
				const wallNs = Number(process.hrtime.bigint() - start)
				const usedNs = (await readNumber(usage)) - before
				// Two busy loops would take two cores; the quota gives them half of one.
				expect(usedNs).toBeLessThanOrEqual(0.5 * wallNs * 1.2)
				expect(usedNs).toBeGreaterThan(0.5 * wallNs * 0.1)
			} finally {
				await sandbox.destroy()
			}
		})

		it('a write past /dev/shm fails with ENOSPC inside its memory limit, and a smaller one succeeds', async () => {
			const sandbox = await file.provider.create({ memoryLimitMb: 256 })
			try {
				const small = await sandbox.exec('dd', [
					'if=/dev/zero',
					'of=/dev/shm/a',
					'bs=1M',
					'count=16',
				])
				expect(small.exitCode).toBe(0)
				const big = await sandbox.exec('dd', ['if=/dev/zero', 'of=/dev/shm/b', 'bs=1M', 'count=64'])
				expect(big.exitCode).not.toBe(0)
				expect(big.stderr).toContain('No space left on device')
				expect(existsSync('/dev/shm/b')).toBe(false)
			} finally {
				await sandbox.destroy()
			}
		})

		it("filling bwrap's /dev past the memory limit is stopped by the limit, and the host is unharmed", async () => {
			const sandbox = await file.provider.create({ memoryLimitMb: 256 })
			const id = sandbox.id
			const memory = groupIn(id, 'memory')
			let failures = 0
			let peak = 0
			let settled = false
			try {
				const outcome = sandbox
					.exec('dd', ['if=/dev/zero', 'of=/dev/namzu-fill', 'bs=1M', 'count=1024'], {
						timeout: 20_000,
					})
					.then(
						(result) => ({ exitCode: result.exitCode }),
						(error: unknown) => ({ error }),
					)
					.finally(() => {
						settled = true
					})
				// Read the group's counters while it exists (a dead agent takes the sandbox down).
				while (!settled) {
					const oom = await readFile(join(memory, 'memory.oom_control'), 'utf8').catch(() => '')
					const kills = Number(/^oom_kill (\d+)$/m.exec(oom)?.[1] ?? 0)
					const failed = await readNumber(join(memory, 'memory.failcnt')).catch(() => 0)
					failures = Math.max(failures, kills + failed)
					peak = Math.max(
						peak,
						await readNumber(join(memory, 'memory.max_usage_in_bytes')).catch(() => 0),
					)
					await new Promise((resolve) => setTimeout(resolve, 25))
				}
				const ended = await outcome
				if ('error' in ended) {
					// The limit took the agent itself: its death is named at once, with the OOM kill.
					expect(ended.error).toBeInstanceOf(GuestDiedError)
					expect((ended.error as GuestDiedError).oomKilled).toBe(true)
				} else {
					expect(ended.exitCode).not.toBe(0)
					expect(failures).toBeGreaterThan(0)
				}
				expect(peak).toBeLessThanOrEqual(256 * MIB)
				expect(existsSync('/dev/namzu-fill')).toBe(false)
			} finally {
				await sandbox.destroy()
			}
			expect(allCgroupDirsFor(id)).toEqual([])
		})
	},
)

const NON_ROOT_HOST = `
import { createLocalSandboxProvider } from ${'LIBRARY'}
const out = {}
const name = (e) => e?.name ?? 'resolved'
const strict = createLocalSandboxProvider({ tier: 'process', stateDir: process.argv[2] })
const refused = await strict.create().then((s) => s.destroy(), (e) => e)
out.strict = name(refused)
out.message = refused?.message ?? ''
const loose = createLocalSandboxProvider({ tier: 'process', stateDir: process.argv[2], defaultLimits: 'best-effort' })
const sandbox = await loose.create()
out.bestEffortExit = (await sandbox.exec('true')).exitCode
await sandbox.destroy()
out.explicit = name(await loose.create({ memoryLimitMb: 64 }).then((s) => s.destroy(), (e) => e))
const disk = await loose.create({ diskLimitMb: 64 }).then((s) => s.destroy(), (e) => e)
out.disk = name(disk)
out.diskRefusal = disk?.refusal
await strict.close(); await loose.close()
console.log(JSON.stringify(out))
`

describe.skipIf(skip !== undefined)(
	`a host that cannot enforce the defaults${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let library: SourceBundle | undefined
		let removeState: () => Promise<void>
		let stateDir = ''

		beforeAll(async () => {
			library = await bundleSource('src/backends/local/index.ts', 'local-tier')
			await chmod(library.dir, 0o755)
			const state = await freshStateDir()
			removeState = state.remove
			stateDir = state.dir
			await chmod(stateDir, 0o777)
		})

		afterAll(async () => {
			await library?.remove()
			await removeState?.()
		})

		it('refuses create() by name unless the caller opts out with defaultLimits: best-effort', async () => {
			if (!library) throw new Error('bundle missing')
			const script = join(library.dir, 'non-root-host.mjs')
			await writeFile(script, NON_ROOT_HOST.replace('LIBRARY', JSON.stringify(library.file)))
			await chmod(script, 0o644)
			const { stdout: output } = await run(
				'setpriv',
				['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, script, stateDir],
				{ env: childEnv() },
			)
			const result = JSON.parse(output.trim().split('\n').pop() ?? '{}') as Record<string, unknown>
			expect(result.strict).toBe('DefaultLimitsUnavailableError')
			expect(result.message).toContain('systemd-run --user --scope -p Delegate=yes')
			expect(result.message).toContain("defaultLimits: 'best-effort'")
			expect(result.bestEffortExit).toBe(0)
			// Limits the caller asks for are never dropped, whatever the mode.
			expect(result.explicit).toBe('CgroupLimitsUnavailableError')
			// A sized workspace needs a loop mount: refused by name on a non-root host.
			expect(result).toMatchObject({ disk: 'DiskLimitUnavailableError', diskRefusal: 'not-root' })
		})
	},
)
