/**
 * The migration lock kept warm while a sandbox starts (`migration-warmth.ts`): which file a write
 * of the host's own main thread goes to (pure, table), and on this host's real cgroup files that
 * the writes happen only while a start holds them, move nothing, and hand back the start's result
 * or its error.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
	parseCgroupMounts,
	parseProcCgroup,
} from '../../../../src/backends/machine/cgroups/cgroup-layout.js'
import {
	migrationWarmthState,
	TICK_MS,
	warmthTarget,
	withMigrationWarmth,
} from '../../../../src/backends/machine/cgroups/migration-warmth.js'
import { pollUntil } from '../../../../src/common/poll-until.js'

const HYBRID_MOUNTS = [
	'30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755',
	'31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw',
	'32 30 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids',
	'33 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory',
	'34 30 0:30 /kubepods /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer',
].join('\n')
const V2_MOUNTS = '31 25 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate'

describe('warmthTarget', () => {
	it.each([
		[
			'hybrid: the pids hierarchy first',
			HYBRID_MOUNTS,
			'4:memory:/app\n3:pids:/app/web\n0::/app',
			'/sys/fs/cgroup/pids/app/web/tasks',
		],
		['hybrid, at the root', HYBRID_MOUNTS, '3:pids:/\n0::/', '/sys/fs/cgroup/pids/tasks'],
		[
			'a hierarchy mounted from below the group is passed over',
			HYBRID_MOUNTS.replace('rw,pids', 'rw,cpuset'),
			'5:freezer:/elsewhere\n4:memory:/m\n0::/',
			'/sys/fs/cgroup/memory/m/tasks',
		],
		[
			'a mount from the group down is used',
			HYBRID_MOUNTS.replace('rw,pids', 'rw,cpuset'),
			'5:freezer:/kubepods/pod1',
			'/sys/fs/cgroup/freezer/pod1/tasks',
		],
		[
			'v2 only',
			V2_MOUNTS,
			'0::/user.slice/run.scope',
			'/sys/fs/cgroup/user.slice/run.scope/cgroup.procs',
		],
		['no cgroup mount', '', '0::/', undefined],
		['no membership', V2_MOUNTS, '', undefined],
	])('%s', (_what, mountinfo, cgroup, expected) => {
		expect(warmthTarget(parseProcCgroup(cgroup), parseCgroupMounts(mountinfo))).toBe(expected)
	})
})

const root = process.getuid?.() === 0

describe.skipIf(!root)('withMigrationWarmth on this host', () => {
	it('writes only while a start holds it, moves nothing, and hands back the result', async () => {
		const before = readFileSync(`/proc/self/task/${process.pid}/cgroup`, 'utf8')
		const start = migrationWarmthState().writes
		let release = () => {}
		const held = new Promise<void>((resolve) => {
			release = resolve
		})
		const result = withMigrationWarmth(async () => {
			await held
			return 'started'
		})
		const wrote = await pollUntil(
			() => migrationWarmthState().writes >= start + 3,
			performance.now() + 30_000,
		)
		expect(wrote, 'three writes while held').toBe(true)
		release()
		expect(await result).toBe('started')
		const atRelease = migrationWarmthState().writes
		expect(await pollUntil(() => !migrationWarmthState().ticking, performance.now() + 30_000)).toBe(
			true,
		)
		// At most the write in flight when the start settled.
		const stopped = migrationWarmthState().writes
		expect(stopped - atRelease).toBeLessThanOrEqual(1)
		await new Promise((resolve) => setTimeout(resolve, TICK_MS * 4))
		expect(migrationWarmthState().writes).toBe(stopped)
		expect(migrationWarmthState().disabled).toBe(false)
		expect(readFileSync(`/proc/self/task/${process.pid}/cgroup`, 'utf8')).toBe(before)
	})

	it("passes a start's failure through, and stops writing after it", async () => {
		const failure = new Error('the start failed')
		await expect(
			withMigrationWarmth(async () => {
				await new Promise((resolve) => setTimeout(resolve, TICK_MS * 2))
				throw failure
			}),
		).rejects.toBe(failure)
		expect(await pollUntil(() => !migrationWarmthState().ticking, performance.now() + 30_000)).toBe(
			true,
		)
	})
})
