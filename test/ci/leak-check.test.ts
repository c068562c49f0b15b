/**
 * `scripts/leak-check.mjs`, the end of `.ci/run`: it names each leftover state root, claim lock,
 * `namzu-sbx-*` cgroup, `namzu-*` network namespace, `namzu-agent-test-*` temp directory, and a
 * microVM guest's directory and the QEMU running from it, and fails; it passes over a clean state; it never searches the cluster harness's cache directory.
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repositoryRoot } from '../helpers/bundle-source.js'

const SCRIPT = join(repositoryRoot, 'scripts', 'leak-check.mjs')

function check(args: readonly string[], env: Record<string, string> = {}) {
	return spawnSync(process.execPath, [SCRIPT, ...args], {
		encoding: 'utf8',
		env: { ...process.env, ...env },
	})
}

describe('leak-check', () => {
	it('names a leftover state root and claim lock and fails; passes once they are gone', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-leak-check-'))
		try {
			const root = join(dir, 'per-test', 'namzu-sbx-0123456789ab')
			await mkdir(root, { recursive: true })
			await mkdir(join(dir, 'namzu-claims'))
			await writeFile(join(dir, 'namzu-claims', 'uid-1879048200.lock'), '{}')
			// Runtime copies outlive every sandbox by design: never a leak.
			await mkdir(join(dir, 'namzu-runtime-0'))
			const cache = join(dir, 'cache')
			await mkdir(join(cache, 'namzu-sbx-aaaaaaaaaaaa'), { recursive: true })
			const run = check(['--kinds', 'state', '--state-roots', `${dir},${cache}`], {
				XDG_CACHE_HOME: cache,
			})
			expect(run.status).toBe(1)
			expect(run.stdout.trim().split('\n').sort()).toEqual(
				[
					`leak-check: leftover state ${join(dir, 'namzu-claims', 'uid-1879048200.lock')}`,
					`leak-check: leftover state ${root}`,
				].sort(),
			)
			expect(run.stderr).toContain('namzu-sandbox gc')

			await rm(join(dir, 'per-test'), { recursive: true })
			await rm(join(dir, 'namzu-claims'), { recursive: true })
			const clean = check(['--kinds', 'state', '--state-roots', dir], { XDG_CACHE_HOME: cache })
			expect(clean.status, clean.stdout).toBe(0)
			expect(clean.stdout).toContain('nothing left')
		} finally {
			await rm(dir, { recursive: true, force: true })
		}
	}, 60_000)

	it('does not count what was recorded before the run, and still counts what came after', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-leak-check-'))
		try {
			const older = join(dir, 'namzu-sbx-0123456789ab')
			await mkdir(older)
			const baseline = join(dir, 'baseline.txt')
			const roots = ['--kinds', 'state', '--state-roots', dir]
			const record = check([...roots, '--record', baseline])
			expect(record.status, record.stderr).toBe(0)
			expect(record.stdout).toContain('recorded 1 present before the run')

			const same = check([...roots, '--baseline', baseline])
			expect(same.status, same.stdout).toBe(0)
			expect(same.stdout).toContain(`present before the run (not counted) state ${older}`)
			expect(same.stdout).toContain('nothing left')

			const newer = join(dir, 'namzu-sbx-ba9876543210')
			await mkdir(newer)
			const after = check([...roots, '--baseline', baseline])
			expect(after.status).toBe(1)
			expect(after.stdout).toContain(`leak-check: leftover state ${newer}`)
			expect(after.stdout).not.toContain(`leak-check: leftover state ${older}`)
		} finally {
			await rm(dir, { recursive: true, force: true })
		}
	}, 60_000)

	it('names a leftover namzu-agent-test temp directory and fails; passes once it is gone', async () => {
		// Its own temp directory (os.tmpdir() follows TMPDIR): what other runs hold is not looked at.
		const dir = await mkdtemp(join(tmpdir(), 'namzu-leak-check-'))
		try {
			const left = join(dir, 'namzu-agent-test-AbC123')
			await mkdir(left)
			await writeFile(join(dir, 'namzu-agent-test-file'), '')
			await mkdir(join(dir, 'namzu-agent-other'))
			const run = check(['--kinds', 'tempdir'], { TMPDIR: dir })
			expect(run.status).toBe(1)
			expect(run.stdout.trim().split('\n')).toEqual([`leak-check: leftover tempdir ${left}`])

			await rmdir(left)
			const clean = check(['--kinds', 'tempdir'], { TMPDIR: dir })
			expect(clean.status, clean.stdout).toBe(0)
			expect(clean.stdout).toContain('nothing left (tempdir)')
		} finally {
			await rm(dir, { recursive: true, force: true })
		}
	}, 60_000)

	it('refuses an unknown kind by name', () => {
		const run = check(['--kinds', 'sockets'])
		expect(run.status).toBe(2)
		expect(run.stderr).toContain(
			'unknown kind sockets (known: cgroup, mount, loop, process, state, netns, tempdir)',
		)
	})

	const pids = /^\d+:pids:(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1]
	const parent = pids === undefined ? undefined : `/sys/fs/cgroup/pids${pids === '/' ? '' : pids}`
	it.skipIf(process.getuid?.() !== 0 || parent === undefined || !existsSync(parent ?? ''))(
		'names a leftover namzu-sbx cgroup',
		async () => {
			const dir = join(parent ?? '', 'namzu-sbx-fedcba987654')
			await mkdir(dir)
			try {
				const run = check(['--kinds', 'cgroup'])
				expect(run.status).toBe(1)
				expect(run.stdout).toContain(`leak-check: leftover cgroup ${dir}`)
			} finally {
				await rmdir(dir)
			}
		},
		60_000,
	)

	const hasIp = spawnSync('ip', ['netns', 'list']).status === 0
	it.skipIf(process.getuid?.() !== 0 || !hasIp)(
		'names a leftover namzu- network namespace, not one of another name; not once it is gone',
		() => {
			const ours = `namzu-leak-${process.pid}`
			const other = `nzleak-${process.pid}`
			const ip = (...args: string[]) => {
				const run = spawnSync('ip', args, { encoding: 'utf8' })
				if (run.status !== 0) throw new Error(`ip ${args.join(' ')}: ${run.stderr}`)
			}
			ip('netns', 'add', ours)
			try {
				ip('netns', 'add', other)
				try {
					const run = check(['--kinds', 'netns'])
					expect(run.status).toBe(1)
					expect(run.stdout).toContain(`leak-check: leftover netns ${ours}\n`)
					expect(run.stdout).not.toContain(other)
				} finally {
					ip('netns', 'del', other)
				}
			} finally {
				ip('netns', 'del', ours)
			}
			// Another run's stand-in internet may be up right now: only ours must be gone.
			const clean = check(['--kinds', 'netns'])
			expect(clean.stdout).not.toContain(ours)
		},
		60_000,
	)

	it('names a microVM guest left behind — its directory and the QEMU running from it — and fails', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-leak-check-'))
		// A QEMU guest's private directory is a state root: its overlay and monitor socket live there.
		const root = join(dir, 'namzu-sbx-5eed0123abcd')
		await mkdir(root)
		await writeFile(join(root, 'root.qcow2'), '')
		// A stand-in for the VMM: a process whose command line names the directory, as QEMU's does.
		const vmm = spawn(
			'/bin/sh',
			['-c', 'sleep 600', 'qemu-system-x86_64', '-qmp', `unix:${root}/qmp.sock,server=on`],
			{ stdio: 'ignore' },
		)
		try {
			await new Promise((resolve) => vmm.once('spawn', resolve))
			const run = check(['--kinds', 'state,process', '--state-roots', dir])
			expect(run.status).toBe(1)
			expect(run.stdout).toContain(`leak-check: leftover state ${root}\n`)
			expect(run.stdout).toMatch(
				new RegExp(
					`leak-check: leftover process ${vmm.pid} /bin/sh -c sleep 600 qemu-system-x86_64`,
				),
			)
		} finally {
			const exited = new Promise((resolve) => vmm.once('exit', resolve))
			vmm.kill('SIGKILL')
			await exited
		}
		await rm(root, { recursive: true })
		// Other runs' sandboxes may be running right now: only ours must be gone.
		const clean = check(['--kinds', 'state,process', '--state-roots', dir])
		expect(clean.stdout).not.toContain(root)
		await rm(dir, { recursive: true, force: true })
	}, 60_000)
})
