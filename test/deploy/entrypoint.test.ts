/**
 * The guest image's entrypoint (deploy/k8s/entrypoint.sh), run as a container runtime would run
 * it — pid 1 of its own pid namespace inside the image's own root filesystem — on both of its
 * paths: root (the workspace template: a real loop device formatted only when proven empty) and
 * non-root (the task template: never root, never a capability). A probe stands in for the agent
 * to report what it was handed; the last suite runs the real agent behind tini.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chown, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawRequest } from '../helpers/raw-agent-client.js'
import {
	AGENT_BUNDLE,
	type GuestScratch,
	guestRootfsSkipReason,
	guestScratch,
	loopDevice,
	probeReport,
} from './guest-rootfs-runner.js'

const skip = guestRootfsSkipReason()
const NO_CAPS = Array(5).fill('0000000000000000')
/** An empty, non-executable file: what `command -v` sees as a missing tool. */
const MISSING = null

function blkidStatus(device: string): number {
	try {
		execFileSync('blkid', ['-p', device], { stdio: 'ignore' })
		return 0
	} catch (error) {
		return (error as { status: number }).status
	}
}

describe.skipIf(skip !== undefined)(
	`the guest entrypoint${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let guest: GuestScratch
		beforeAll(async () => {
			guest = await guestScratch()
		})
		afterAll(async () => {
			await guest?.remove()
		})

		describe('as root (the workspace template runs privileged)', () => {
			it('execs tini as pid 1 with the agent its child, as uid 1001 with empty capability sets and no_new_privs', async () => {
				const run = await guest.run()
				expect(run.code).toBe(0)
				expect(probeReport(run)).toMatchObject({
					uid: 1001,
					gid: 1001,
					pid1: 'tini',
					parent: 'tini',
					caps: NO_CAPS,
					noNewPrivs: '1',
				})
			})

			it('exports HOME=/home/namzu, USER and LOGNAME from the passwd entry and writable XDG dirs, over what the image set', async () => {
				const run = await guest.run({
					env: { HOME: '/root', USER: 'root', XDG_CACHE_HOME: '/root/.cache' },
				})
				const report = probeReport(run)
				expect(report.env).toEqual({
					HOME: '/home/namzu',
					USER: 'namzu',
					LOGNAME: 'namzu',
					XDG_CACHE_HOME: '/home/namzu/.cache',
					XDG_CONFIG_HOME: '/home/namzu/.config',
				})
				expect(report).toMatchObject({
					home: { uid: 1001 },
					cache: { uid: 1001 },
					config: { uid: 1001 },
					homeWritable: true,
				})
			})

			it.each([
				['the uid has no passwd entry', { AGENT_UID: '4242', AGENT_GID: '4242' }, {}, 4242],
				[
					'the passwd home is under the workspace root',
					{ NAMZU_SANDBOX_WORKSPACE: '/home' },
					{},
					1001,
				],
				['getent is missing', {}, { '/usr/bin/getent': MISSING }, 1001],
			])(
				'falls back to a fresh 0700 /tmp/namzu-home-<uid> when %s',
				async (_case, env, fakes, uid) => {
					const run = await guest.run({ env, fakes })
					expect(run.code).toBe(0)
					const report = probeReport(run)
					expect(report.env).toMatchObject({
						HOME: `/tmp/namzu-home-${uid}`,
						USER: 'namzu',
						LOGNAME: 'namzu',
						XDG_CACHE_HOME: `/tmp/namzu-home-${uid}/.cache`,
					})
					expect(report).toMatchObject({ uid, home: { uid, mode: '700' }, homeWritable: true })
				},
			)

			it('refuses to start the agent when neither the passwd home nor the fallback can be made', async () => {
				const run = await guest.run({
					env: { AGENT_UID: '4242', AGENT_GID: '4242' },
					command: ['/bin/sh', '-c', 'mount -o remount,ro /tmp && exec /entrypoint.sh'],
				})
				expect(run.code).not.toBe(0)
				expect(run.stderr).toContain('no home for uid 4242')
				expect(run.stdout).toBe('')
			})

			it('formats an empty device ext4, mounts it at the workspace for the agent, and never reformats it', async () => {
				const disk = await loopDevice(guest.dir)
				try {
					const first = await guest.run({
						device: disk.path,
						env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace', PROBE_WRITE: 'kept across boots' },
					})
					expect(first.code).toBe(0)
					expect(first.stderr).toContain('carries no filesystem: formatting it ext4')
					expect(probeReport(first)).toMatchObject({
						workspace: { fstype: 'ext4', source: '/dev/workspace', owner: { uid: 1001 } },
						marker: 'kept across boots',
					})
					const second = await guest.run({
						device: disk.path,
						env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
					})
					expect(second.code).toBe(0)
					expect(second.stderr).not.toContain('formatting')
					expect(probeReport(second)).toMatchObject({
						workspace: { fstype: 'ext4' },
						marker: 'kept across boots',
					})
				} finally {
					disk.detach()
				}
			})

			it.each([1, 4, 8, 126, 127])(
				'aborts on blkid exit %i, naming the status, with blkid stderr on the log and the device untouched',
				async (status) => {
					const disk = await loopDevice(guest.dir)
					try {
						const run = await guest.run({
							device: disk.path,
							env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
							fakes: {
								'/usr/sbin/blkid': `#!/bin/sh\necho 'fake blkid diagnostics' >&2\nexit ${status}\n`,
							},
						})
						expect(run.code).toBe(1)
						expect(run.stderr).toContain(`blkid exited ${status} on /dev/workspace`)
						expect(run.stderr).toContain('fake blkid diagnostics')
						expect(run.stdout).toBe('')
						expect(blkidStatus(disk.path)).toBe(2)
					} finally {
						disk.detach()
					}
				},
			)

			it('aborts when blkid exits 0 without naming a filesystem type', async () => {
				const disk = await loopDevice(guest.dir)
				try {
					const run = await guest.run({
						device: disk.path,
						env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
						fakes: { '/usr/sbin/blkid': '#!/bin/sh\nexit 0\n' },
					})
					expect(run.code).toBe(1)
					expect(run.stderr).toContain('printed no filesystem type')
					expect(blkidStatus(disk.path)).toBe(2)
				} finally {
					disk.detach()
				}
			})

			it('does not format when blkid finds nothing but the device cannot be read', async () => {
				const disk = await loopDevice(guest.dir)
				try {
					const run = await guest.run({
						device: disk.path,
						env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
						fakes: { '/usr/bin/dd': '#!/bin/sh\nexit 1\n' },
					})
					expect(run.code).toBe(1)
					expect(run.stderr).toContain('cannot be read; not formatting it')
					expect(blkidStatus(disk.path)).toBe(2)
				} finally {
					disk.detach()
				}
			})

			it.each([
				['blkid', '/usr/sbin/blkid'],
				['dd', '/usr/bin/dd'],
				['mkfs.ext4', '/usr/sbin/mkfs.ext4'],
				['mount', '/usr/bin/mount'],
				['chown', '/usr/bin/chown'],
				['setpriv', '/usr/bin/setpriv'],
			])('names a missing %s before touching the device', async (tool, path) => {
				const disk = await loopDevice(guest.dir)
				try {
					const run = await guest.run({
						device: disk.path,
						env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
						fakes: { [path]: MISSING },
					})
					expect(run.code).toBe(1)
					expect(run.stderr).toContain(`${tool} is not on PATH`)
					expect(blkidStatus(disk.path)).toBe(2)
				} finally {
					disk.detach()
				}
			})
		})

		describe('as a non-root user (the task template never has root)', () => {
			it('execs setpriv --no-new-privs -- tini -- node agent: tini pid 1, the same uid, no capability, a home', async () => {
				const run = await guest.run({ uid: 1001, env: { HOME: '/root' } })
				expect(run.code).toBe(0)
				expect(probeReport(run)).toMatchObject({
					uid: 1001,
					pid1: 'tini',
					caps: NO_CAPS,
					noNewPrivs: '1',
					env: { HOME: '/home/namzu', USER: 'namzu', LOGNAME: 'namzu' },
					homeWritable: true,
				})
			})

			it('refuses a configured block device, naming its uid, instead of skipping the format', async () => {
				const run = await guest.run({
					uid: 1001,
					env: { NAMZU_WORKSPACE_DEVICE: '/dev/workspace' },
				})
				expect(run.code).toBe(1)
				expect(run.stderr).toContain('runs as uid 1001')
				expect(run.stdout).toBe('')
			})
		})

		describe('prestop (the workspace template preStop hook)', () => {
			it.each([
				[{}, 17],
				[{ NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '3000' }, 5],
				[{ NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '15001' }, 18],
				[{ NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '60000' }, 62],
				[{ NAMZU_PRESTOP_WAIT_SECONDS: '7' }, 7],
			])(
				'with %j waits up to %i s, and signals no pid 1 that is not tini',
				async (env, seconds) => {
					const run = await guest.run({
						env,
						args: ['prestop'],
						fakes: { '/usr/bin/sync': '#!/bin/sh\necho "sync $*" >&2\n' },
					})
					expect(run.code).toBe(0)
					expect(run.stderr).toContain(`wait up to ${seconds} s`)
					expect(run.stderr).toContain("pid 1 is 'entrypoint.sh', not 'tini'; not signalling it")
					expect(run.stderr).toContain('sync -f /workspace\n')
				},
			)

			it('syncs only the workspace filesystem (sync -f), never a bare sync', async () => {
				const run = await guest.run({
					args: ['prestop'],
					env: { NAMZU_SANDBOX_WORKSPACE: '/workspace' },
					fakes: { '/usr/bin/sync': '#!/bin/sh\necho "sync called with: $*" >&2\n' },
				})
				const calls = run.stderr.split('\n').filter((line) => line.startsWith('sync called with:'))
				expect(calls).toEqual(['sync called with: -f /workspace'])
			})

			it('TERMs pid 1 when it is tini and waits for it', async () => {
				const run = await guest.run({
					env: { NAMZU_PRESTOP_WAIT_SECONDS: '1' },
					command: [
						'/usr/bin/tini',
						'-s',
						'--',
						'/bin/sh',
						'-c',
						"trap 'echo got-term' TERM; /entrypoint.sh prestop; echo hook-returned",
					],
				})
				expect(run.code).toBe(0)
				expect(run.stdout).toBe('got-term\nhook-returned\n')
				expect(run.stderr).not.toContain('not signalling')
			})

			it('TERMs a pid 1 NAMZU_PRESTOP_INIT_NAME names', async () => {
				const run = await guest.run({
					env: { NAMZU_PRESTOP_INIT_NAME: 'sh', NAMZU_PRESTOP_WAIT_SECONDS: '1' },
					command: [
						'/bin/sh',
						'-c',
						"trap 'echo got-term' TERM; /entrypoint.sh prestop; echo after",
					],
				})
				expect(run.stdout).toBe('got-term\nafter\n')
			})
		})

		describe('the real agent behind tini', () => {
			it('serves healthz as the agent user, and tini forwards SIGTERM: the container exits 0', async () => {
				const run = join(guest.dir, 'run')
				await mkdir(run)
				await chown(run, 1001, 1001)
				let bwrapPid = 0
				const exited = guest.run({
					agent: AGENT_BUNDLE,
					binds: { '/run': run },
					env: { NAMZU_AGENT_UNIX_PATH: '/run/agent.sock' },
					onSpawn: (pid) => {
						bwrapPid = pid
					},
				})
				const socketPath = join(run, 'agent.sock')
				for (let i = 0; i < 200 && !existsSync(socketPath); i++) {
					await new Promise((resolve) => setTimeout(resolve, 50))
				}
				const health = await rawRequest({ socketPath }, { op: 'healthz' })
				expect(health.frames[0]).toMatchObject({ ok: true })
				const init = readdirSync('/proc')
					.filter((entry) => /^\d+$/.test(entry))
					.find((entry) => {
						try {
							const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
							return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === bwrapPid
						} catch {
							return false
						}
					})
				expect(init, 'the container pid 1').toBeDefined()
				expect(readFileSync(`/proc/${init}/comm`, 'utf8').trim()).toBe('tini')
				process.kill(Number(init), 'SIGTERM')
				const result = await exited
				expect(result.code).toBe(0)
			})
		})
	},
)
