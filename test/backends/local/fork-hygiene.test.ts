/**
 * A fork's own identity on the local tier (real bubblewrap, real cgroups): five forks made at once
 * from one checkpoint all start, each with a new sandbox id, its own agent process, its own host
 * uid (on a root host, where each sandbox has one), its own cgroups, and its own copy of every file
 * (no inode shared with the parent, a sibling or the store: one link each). Attack: a fork cannot
 * see its parent's workspace or the checkpoint store; positive control: it sees its own.
 */
import { readFileSync } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { LocalSandbox } from '../../../src/backends/local/index.js'
import { CHECKPOINTS_DIR_NAME } from '../../../src/backends/machine/snapshots/checkpoint-store.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { allCgroupDirsFor, processesMentioning, useLocalProvider } from './local-test-support.js'

const skip = bwrapSkipReason()
const FORKS = 5

/** The host uid a process runs as (`Uid:` of its status: real uid first). */
function hostUidOf(pid: number): number | undefined {
	try {
		const line = readFileSync(`/proc/${pid}/status`, 'utf8')
			.split('\n')
			.find((entry) => entry.startsWith('Uid:'))
		return line === undefined ? undefined : Number(line.split(/\s+/)[1])
	} catch {
		return undefined
	}
}

/** The cgroup paths of a process, every hierarchy. */
function cgroupsOf(pid: number): string {
	try {
		return readFileSync(`/proc/${pid}/cgroup`, 'utf8')
	} catch {
		return ''
	}
}

/** What the host sees of one sandbox: its processes, their uids and cgroups. */
function hostView(sandbox: LocalSandbox) {
	const pids = processesMentioning(`namzu-sbx-${sandbox.id}/`)
	return {
		id: sandbox.id,
		pids,
		uids: new Set(pids.map(hostUidOf).filter((uid) => uid !== undefined)),
		cgroups: pids.map(cgroupsOf).join('\n'),
		cgroupDirs: allCgroupDirsFor(sandbox.id),
	}
}

describe.skipIf(skip !== undefined)(
	`a fork's own identity on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()

		it('five forks made at once: new ids, own agents, uids, cgroups and files', async () => {
			const parent = await file.provider.create()
			const forks: LocalSandbox[] = []
			try {
				await parent.writeFile('seed.txt', 'seed')
				const checkpoint = await parent.checkpoint()
				const settled = await Promise.allSettled(
					Array.from({ length: FORKS }, () => file.provider.create({ from: checkpoint })),
				)
				for (const made of settled) if (made.status === 'fulfilled') forks.push(made.value)
				expect(settled.filter((made) => made.status === 'rejected')).toEqual([])
				const all = [parent, ...forks]
				expect(new Set(all.map((sandbox) => sandbox.id)).size).toBe(FORKS + 1)

				const views = all.map(hostView)
				const seenPids = new Set<number>()
				for (const view of views) {
					// Its own agent: processes of its own, none shared with another sandbox.
					expect(view.pids.length, `processes of ${view.id}`).toBeGreaterThan(0)
					for (const pid of view.pids) {
						expect(seenPids.has(pid), `pid ${pid} shared`).toBe(false)
						seenPids.add(pid)
					}
					// Its own cgroups: named by its id, and its processes are in them, not another's.
					expect(view.cgroupDirs.length, `cgroups of ${view.id}`).toBeGreaterThan(0)
					expect(view.cgroups).toContain(`namzu-sbx-${view.id}`)
					for (const other of views) {
						if (other.id !== view.id) expect(view.cgroups).not.toContain(`namzu-sbx-${other.id}`)
					}
				}
				if (process.getuid?.() === 0) {
					// A root host gives each sandbox a uid of its own: one per sandbox, all distinct.
					for (const view of views) expect(view.uids.size, `uids of ${view.id}`).toBe(1)
					const uids = views.flatMap((view) => [...view.uids])
					expect(new Set(uids).size).toBe(FORKS + 1)
				}

				// Own bytes: a distinct inode per sandbox, and one link (none into the store).
				const inodes = await Promise.all(
					all.map((sandbox) => lstat(join(sandbox.rootDir, 'seed.txt'))),
				)
				expect(new Set(inodes.map((info) => info.ino)).size).toBe(FORKS + 1)
				for (const info of inodes) expect(info.nlink).toBe(1)
				await Promise.all(forks.map((fork, index) => fork.writeFile('seed.txt', `fork ${index}`)))
				for (const [index, fork] of forks.entries()) {
					expect((await fork.readFile('seed.txt')).toString()).toBe(`fork ${index}`)
				}
				expect((await parent.readFile('seed.txt')).toString()).toBe('seed')
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await Promise.allSettled([...forks, parent].map((sandbox) => sandbox.destroy()))
			}
		})

		it("a fork cannot reach its parent's workspace or the checkpoint store", async () => {
			const parent = await file.provider.create()
			try {
				await parent.writeFile('secret.txt', 'parent only')
				const checkpoint = await parent.checkpoint()
				const fork = await file.provider.create({ from: checkpoint })
				try {
					const store = join(file.stateDir, CHECKPOINTS_DIR_NAME)
					const parentFile = join(parent.rootDir, 'secret.txt')
					const reach = await fork.exec('sh', [
						'-c',
						`cat "$1"; echo "write" >> "$1"; ls "$2"; echo "write" > "$2/x"; exit 0`,
						'sh',
						parentFile,
						store,
					])
					expect(reach.stdout).not.toContain('parent only')
					expect(reach.stdout).not.toMatch(/[0-9a-f]{16}/)
					expect((await parent.readFile('secret.txt')).toString()).toBe('parent only')
					// Positive control: the fork reads its own copy at its own root.
					const own = await fork.exec('cat', [join(fork.rootDir, 'secret.txt')])
					expect(own.stdout).toBe('parent only')
					expect(fork.rootDir === parent.rootDir).toBe(false)
				} finally {
					await fork.destroy()
				}
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await parent.destroy()
			}
		})
	},
)
