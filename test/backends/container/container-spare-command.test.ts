/**
 * The next command started ahead on the container tier (`spare-command.ts` in the agent), on runc
 * and crun: a copy of the image's own shell the workload cannot read waits in the next command's
 * groups. Every isolation property is checked through a real container: the spare is not dumpable
 * although the workload has its uid (attack, with a process of the workload's own as the positive
 * control), an abort of a pooled sandbox's first command ends its whole tree, the command's
 * accounting is its own, destroy leaves nothing, and a command started from a spare sees what a
 * fresh spawn sees. gVisor takes no host groups and its loader must read what it runs: no spare.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerRuntime,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import {
	abortEscapingTree,
	commandGroup,
	freshAndSparedOutputs,
	innerPid,
	SPARE_MARK,
	withoutSpares,
} from '../../helpers/spare-commands.js'
import {
	CRUN_PATH,
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	processesMentioning,
	RUNC_PATH,
	removeStateDir,
	waitFor,
} from './container-test-support.js'

const MIB = 1024 * 1024
const LAYOUT = { outputs: { source: { type: 'inImage' as const } } }
const RUNTIMES: readonly [ContainerRuntime, string | undefined][] = [
	['runc', containerSkipReason(RUNC_PATH)],
	['crun', containerSkipReason(CRUN_PATH)],
]

/** Host pids of the spares waiting in the sandbox whose host cgroups are named `name`. */
function sparesIn(name: string): number[] {
	return processesMentioning(SPARE_MARK).filter((pid) => {
		try {
			return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`/${name}/`)
		} catch {
			return false
		}
	})
}

async function waitingSpare(name: string): Promise<number> {
	await waitFor(async () => sparesIn(name).length === 1, `a spare waiting in ${name}`)
	const [pid] = sparesIn(name)
	if (pid === undefined) throw new Error('no spare')
	return pid
}

/**
 * From a background process of the workload (perl: the image has no python): what it can do to
 * the waiting spare and to a child of its own. Writes `key=value` lines to attack.txt.
 */
const ATTACK = `
use strict; use warnings;
my $mark = '${SPARE_MARK}';
sub spare {
  opendir(my $d, '/proc') or return;
  for my $p (grep { /^\\d+$/ && $_ != $$ } readdir $d) {
    open(my $f, '<', "/proc/$p/cmdline") or next;
    local $/; my $c = <$f>;
    return $p if defined $c && index($c, $mark) >= 0;
  }
  return;
}
my $control = fork;
if ($control == 0) { exec 'sleep', '60' }
my $target;
for (1 .. 400) { $target = spare(); last if $target; select(undef, undef, undef, 0.05) }
my @report = ('found=' . ($target ? 'yes' : 'no'));
for my $pair (['spare', $target], ['control', $control]) {
  my ($name, $pid) = @$pair;
  next unless $pid;
  push @report, "\${name}_fd=" . (opendir(my $d, "/proc/$pid/fd") ? 'read' : $! + 0);
  push @report, "\${name}_environ=" . (open(my $e, '<', "/proc/$pid/environ") ? 'read' : $! + 0);
  $! = 0;
  if (syscall(101, 16, $pid, 0, 0) == 0) {
    push @report, "\${name}_ptrace=attached";
    if ($pid == $control) { waitpid($pid, 0) } else { select(undef, undef, undef, 0.1) }
    syscall(101, 17, $pid, 0, 0);
  } else { push @report, "\${name}_ptrace=" . ($! + 0) }
}
kill 'KILL', $control;
open(my $out, '>', 'attack.txt.tmp') or die; print $out join("\\n", @report), "\\n"; close $out;
rename 'attack.txt.tmp', 'attack.txt';
`

async function reportWhenThere(sandbox: Sandbox, path: string): Promise<Record<string, string>> {
	let text = ''
	await waitFor(async () => {
		try {
			text = (await sandbox.readFile(path)).toString('utf8')
			return true
		} catch {
			return false
		}
	}, path)
	return Object.fromEntries(
		text
			.trim()
			.split('\n')
			.map((line) => line.split('=') as [string, string]),
	)
}

for (const [runtime, skip] of RUNTIMES) {
	describe.skipIf(skip !== undefined)(`commands started ahead (container tier, ${runtime})`, () => {
		let provider: ContainerSandboxProvider
		let stateDir = ''
		const backend = () => ({ tier: 'container' as const, runtime, image: guestImage(), stateDir })
		beforeAll(async () => {
			stateDir = await makeStateDir(`spare-${runtime}`)
			provider = createContainerSandboxProvider(backend(), LAYOUT)
		})
		afterAll(async () => {
			await provider?.close()
			expect(await removeStateDir(stateDir)).toEqual([])
		})

		it('the next command waits in its own groups in a copy of the image shell nobody can read, and the command that takes it runs as it', async () => {
			const sandbox = await provider.create()
			try {
				const name = `namzu-sbx-${sandbox.id}`
				const spare = await waitingSpare(name)
				const spareGroup = commandGroup(readFileSync(`/proc/${spare}/cgroup`, 'utf8'))
				expect(spareGroup).toMatch(/^c-\d+$/)
				const sparePid = innerPid(spare)
				const result = await sandbox.exec('sh', [
					'-c',
					'echo $$; stat -c "%a %U" /run/namzu/sh; cat /run/namzu/sh >/dev/null 2>&1 || echo unreadable',
				])
				expect(result.stdout).toBe(`${sparePid}\n111 root\nunreadable\n`)
				// The next one waits in a new group of its own.
				const next = await waitingSpare(name)
				expect(commandGroup(readFileSync(`/proc/${next}/cgroup`, 'utf8'))).not.toBe(spareGroup)
			} finally {
				await sandbox.destroy()
			}
		})

		it('a waiting spare is not dumpable: the workload of the same uid can neither trace it nor reach its descriptors (its own child it can)', async () => {
			const sandbox = await provider.create()
			try {
				await sandbox.writeFile('attack.pl', ATTACK)
				// In the background, so it runs while the next spare waits.
				await sandbox.exec('sh', ['-c', 'perl attack.pl >/dev/null 2>attack.err &'])
				const report = await reportWhenThere(sandbox, 'attack.txt')
				const EACCES = '13'
				const EPERM = '1'
				expect(report).toEqual({
					found: 'yes',
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
			const pooled = createContainerSandboxProvider({ ...backend(), warmPoolSize: 1 }, LAYOUT)
			const marker = `spare-abort-${randomUUID().slice(0, 8)}`
			try {
				const sandbox = await pooled.create()
				await waitingSpare(`namzu-sbx-${sandbox.id}`)
				expect(
					await abortEscapingTree(sandbox, marker, (m) => processesMentioning(m).length),
				).toEqual({ ended: 'aborted', started: true, gone: true, servesOn: 'on\n' })
				await sandbox.destroy()
			} finally {
				await pooled.close()
			}
		})

		it("the first command's accounting is its own: its CPU and peak memory, none of the next's", async () => {
			const sandbox = await provider.create({ memoryLimitMb: 512 })
			try {
				const name = `namzu-sbx-${sandbox.id}`
				await waitingSpare(name)
				const first = await sandbox.exec(
					'node',
					['-e', `Buffer.alloc(${64 * MIB}, 1); console.log('done')`],
					{ timeout: 120_000 },
				)
				expect(first.stdout).toBe('done\n')
				expect((first.cpuUserMs ?? 0) + (first.cpuSystemMs ?? 0)).toBeGreaterThan(0)
				expect(first.peakMemoryBytes ?? 0).toBeGreaterThanOrEqual(64 * MIB)
				await waitingSpare(name)
				const next = await sandbox.exec('true')
				expect(typeof next.peakMemoryBytes).toBe('number')
				expect(next.peakMemoryBytes ?? 0).toBeLessThan(64 * MIB)
			} finally {
				await sandbox.destroy()
			}
		})

		it('destroy leaves no group and no process behind, the waiting spare included', async () => {
			const sandbox = await provider.create()
			const id = sandbox.id
			await sandbox.exec('true')
			const spare = await waitingSpare(`namzu-sbx-${id}`)
			await sandbox.destroy()
			expect(cgroupDirsOf(id)).toEqual([])
			await waitFor(async () => !existsSync(`/proc/${spare}`), 'the spare to end')
		})

		it('a command started from a spare gets the directory and environment a fresh spawn gives', async () => {
			const plain = await withoutSpares(() => provider.create())
			const spared = await provider.create()
			try {
				const pairs = await freshAndSparedOutputs(plain, spared, () =>
					waitingSpare(`namzu-sbx-${spared.id}`),
				)
				for (const [fromFresh, fromSpare] of pairs) expect(fromSpare).toBe(fromFresh)
				expect(sparesIn(`namzu-sbx-${plain.id}`), 'the setting switched spares off').toEqual([])
			} finally {
				await Promise.all([plain.destroy(), spared.destroy()])
			}
		})
	})
}
