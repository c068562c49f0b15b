/**
 * The next command started ahead on the local tier (`spare-command.ts` in the agent): a shell that
 * already joined the command's own groups waits for it, so the first command of a pooled sandbox
 * pays no cgroup migration. Every isolation property is checked through the real sandbox: the
 * spare is not dumpable (attack, with a dumpable process of the workload's own as the positive
 * control), an abort of the first command still ends its whole tree, the first command's
 * accounting is its own, destroy leaves no group or spare behind, and a command started from a
 * spare sees the same directory and environment as one spawned fresh.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import { createLocalSandboxProvider } from '../../../src/local-entry.js'
import {
	abortEscapingTree,
	commandGroup,
	freshAndSparedOutputs,
	innerPid,
	SPARE_MARK,
	withoutSpares,
} from '../../helpers/spare-commands.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	ALLOCATE_AND_SPIN,
	allCgroupDirsFor,
	freshStateDir,
	processesMentioning,
	useLocalProvider,
	waitFor,
} from './local-test-support.js'

const skip = bwrapSkipReason()
const MIB = 1024 * 1024

/** Host pids of the spares waiting in sandbox `id`. */
function sparesOf(id: string): number[] {
	return processesMentioning(SPARE_MARK).filter((pid) => {
		try {
			return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`namzu-sbx-${id}/`)
		} catch {
			return false
		}
	})
}

async function waitingSpare(id: string): Promise<number> {
	await waitFor(() => sparesOf(id).length === 1, 20_000)
	const [pid] = sparesOf(id)
	if (pid === undefined) throw new Error('no spare')
	return pid
}

/** Each hierarchy's group below the sandbox's (`work`, `work/c-<n>`), keyed by its controllers. */
function workGroups(cgroupText: string): Record<string, string> {
	const groups: Record<string, string> = {}
	for (const line of cgroupText.split('\n')) {
		const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? []
		const below = /\/(work(?:\/c-\d+)?)$/.exec(path ?? '')?.[1]
		if (controllers !== undefined && below !== undefined) groups[controllers] = below
	}
	return groups
}

const WORK = ALLOCATE_AND_SPIN

/** From a background process of the workload: what it can do to the spare and to its own child. */
const ATTACK = `
import ctypes, json, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
def spare():
    for p in os.listdir('/proc'):
        if p.isdigit() and int(p) != os.getpid():
            try:
                if b'${SPARE_MARK}' in open('/proc/%s/cmdline' % p, 'rb').read(): return int(p)
            except OSError: pass
control = subprocess.Popen(['sleep', '60'])
target = None
for _ in range(400):
    target = spare()
    if target: break
    time.sleep(0.05)
report = {'found': target is not None}
for name, pid in (('spare', target), ('control', control.pid)):
    if pid is None: continue
    try:
        os.listdir('/proc/%d/fd' % pid); report[name + '_fd'] = 'read'
    except OSError as error: report[name + '_fd'] = error.errno
    try:
        open('/proc/%d/environ' % pid, 'rb').read(); report[name + '_environ'] = 'read'
    except OSError as error: report[name + '_environ'] = error.errno
    if libc.ptrace(16, pid, None, None) == 0:
        report[name + '_ptrace'] = 'attached'
        os.waitpid(pid, 0) if pid == control.pid else time.sleep(0.1)
        libc.ptrace(17, pid, None, None)
    else: report[name + '_ptrace'] = ctypes.get_errno()
control.kill()
open('attack.json.tmp', 'w').write(json.dumps(report))
os.rename('attack.json.tmp', 'attack.json')
`

async function readJsonWhenThere(sandbox: Sandbox, path: string): Promise<Record<string, unknown>> {
	for (let tries = 0; tries < 600; tries++) {
		try {
			return JSON.parse((await sandbox.readFile(path)).toString('utf8')) as Record<string, unknown>
		} catch {
			await new Promise((resolve) => setTimeout(resolve, 50))
		}
	}
	throw new Error(`${path} never appeared`)
}

describe.skipIf(skip !== undefined)('commands started ahead (local tier)', () => {
	const file = useLocalProvider()

	it('the next command waits in its own groups, and the command that takes it runs as it', async () => {
		const sandbox = await file.provider.create()
		try {
			const spare = await waitingSpare(sandbox.id)
			const spareCgroups = readFileSync(`/proc/${spare}/cgroup`, 'utf8')
			const spareGroup = commandGroup(spareCgroups)
			const sparePid = innerPid(spare)
			expect(spareGroup).toMatch(/^c-\d+$/)
			const result = await sandbox.exec('sh', ['-c', 'echo $$; cat /proc/self/cgroup'])
			const [pid, ...groups] = result.stdout.trim().split('\n')
			expect(Number(pid)).toBe(sparePid)
			expect(commandGroup(groups.join('\n'))).toBe(spareGroup)
			// The write that warms the kernel's migration lock as it is taken moved it nowhere.
			expect(Object.keys(workGroups(spareCgroups)).length).toBeGreaterThan(1)
			expect(workGroups(groups.join('\n'))).toEqual(workGroups(spareCgroups))
			// The next one waits in a new group of its own.
			const next = await waitingSpare(sandbox.id)
			expect(commandGroup(readFileSync(`/proc/${next}/cgroup`, 'utf8'))).not.toBe(spareGroup)
		} finally {
			await sandbox.destroy()
		}
	})

	it('a waiting spare is not dumpable: the workload can neither trace it nor reach its descriptors (its own child it can)', async () => {
		const sandbox = await file.provider.create()
		try {
			await sandbox.writeFile('attack.py', ATTACK)
			// In the background, so it runs while the next spare waits.
			await sandbox.exec('sh', ['-c', 'python3 attack.py >/dev/null 2>&1 &'])
			const report = await readJsonWhenThere(sandbox, 'attack.json')
			const EACCES = 13
			const EPERM = 1
			expect(report).toEqual({
				found: true,
				spare_fd: EACCES,
				spare_environ: EACCES,
				spare_ptrace: EPERM,
				control_fd: 'read',
				control_environ: 'read',
				control_ptrace: 'attached',
			})
		} finally {
			await sandbox.destroy()
		}
	})

	it('an abort of the first command of a pooled sandbox ends its whole tree, setsid and double-forked descendants included', async () => {
		const state = await freshStateDir()
		const pooled = createLocalSandboxProvider({
			tier: 'process',
			stateDir: state.dir,
			warmPoolSize: 1,
		})
		const marker = `spare-abort-${randomUUID().slice(0, 8)}`
		try {
			const sandbox = await pooled.create()
			await waitingSpare(sandbox.id)
			expect(
				await abortEscapingTree(sandbox, marker, (m) => processesMentioning(m).length),
			).toEqual({
				ended: 'aborted',
				started: true,
				gone: true,
				servesOn: 'on\n',
			})
			await sandbox.destroy()
		} finally {
			await pooled.close()
			await state.remove()
		}
	})

	it("the first command's accounting is its own: its CPU and peak memory, none of the next's", async () => {
		const sandbox = await file.provider.create({ memoryLimitMb: 512 })
		try {
			await waitingSpare(sandbox.id)
			const first = await sandbox.exec('python3', ['-c', WORK, '64'], { timeout: 120_000 })
			expect(first.stdout).toBe('done\n')
			expect(first.oomKilled).toBe(false)
			expect((first.cpuUserMs ?? 0) + (first.cpuSystemMs ?? 0)).toBeGreaterThan(0)
			expect(first.peakMemoryBytes ?? 0).toBeGreaterThanOrEqual(64 * MIB)
			await waitingSpare(sandbox.id)
			const next = await sandbox.exec('true')
			expect(typeof next.peakMemoryBytes).toBe('number')
			expect(next.peakMemoryBytes ?? 0).toBeLessThan(64 * MIB)
		} finally {
			await sandbox.destroy()
		}
	})

	it('destroy leaves no group and no process behind, the waiting spare included', async () => {
		const sandbox = await file.provider.create()
		const id = sandbox.id
		await sandbox.exec('true')
		const spare = await waitingSpare(id)
		await sandbox.destroy()
		expect(allCgroupDirsFor(id)).toEqual([])
		await waitFor(() => !existsSync(`/proc/${spare}`))
	})

	it('a command started from a spare gets the directory and environment a fresh spawn gives', async () => {
		const fresh: Sandbox = await withoutSpares(() => file.provider.create())
		const spared = await file.provider.create()
		try {
			const workspaces = new Map(
				await Promise.all(
					[fresh, spared].map(
						async (sandbox) => [sandbox, (await sandbox.exec('pwd')).stdout.trim()] as const,
					),
				),
			)
			const pairs = await freshAndSparedOutputs(
				fresh,
				spared,
				() => waitingSpare(spared.id),
				(output, sandbox) => output.replaceAll(workspaces.get(sandbox) ?? '?', '<workspace>'),
			)
			for (const [fromFresh, fromSpare] of pairs) expect(fromSpare).toBe(fromFresh)
			expect(sparesOf(fresh.id), 'the setting switched spares off').toEqual([])
		} finally {
			await Promise.all([fresh.destroy(), spared.destroy()])
		}
	})
})
