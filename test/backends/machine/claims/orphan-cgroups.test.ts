/**
 * `gc` reaps top-level `namzu-sbx-<id>` cgroups that no record owns — real groups made here, in
 * this process's own group of one hierarchy — once they are empty and old; and leaves a young one
 * (a create between making its groups and starting its agent), a populated one (a live sandbox of
 * another state directory) and one whose sandbox has a live record in the state directory.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, rmdir, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { emptyClaims } from '../../../../src/backends/machine/claims/host-claims.js'
import { readProcessIdentity } from '../../../../src/backends/machine/claims/process-identity.js'
import { writeHostClaims } from '../../../../src/backends/machine/claims/release-host-claims.js'
import { collectLocalGarbage } from '../../../../src/backends/machine/index.js'

/** A directory sandbox groups are made in here: our own group of the pids (or unified) hierarchy. */
function parentGroup(): string | undefined {
	if (process.getuid?.() !== 0) return undefined
	const membership = readFileSync('/proc/self/cgroup', 'utf8')
	const pids = /^\d+:pids:(.*)$/m.exec(membership)?.[1]
	const unified = /^0::(.*)$/m.exec(membership)?.[1]
	const candidates = [
		...(pids === undefined ? [] : [`/sys/fs/cgroup/pids${pids === '/' ? '' : pids}`]),
		...(unified === undefined
			? []
			: [`/sys/fs/cgroup/unified${unified === '/' ? '' : unified}`, `/sys/fs/cgroup${unified}`]),
	]
	return candidates.find((dir) => existsSync(join(dir, 'cgroup.procs')))
}

const parent = parentGroup()
const made: string[] = []
const sleepers: ChildProcess[] = []

afterAll(async () => {
	for (const child of sleepers) child.kill('SIGKILL')
	await new Promise((resolve) => setTimeout(resolve, 200))
	for (const dir of made) await rmdir(dir).catch(() => undefined)
})

function randomId(): string {
	return Array.from({ length: 12 }, () => Math.floor(Math.random() * 16).toString(16)).join('')
}

async function group(id: string, old: boolean): Promise<string> {
	if (parent === undefined) throw new Error('no parent group')
	const dir = join(parent, `namzu-sbx-${id}`)
	await mkdir(dir)
	made.push(dir)
	if (old) {
		const hourAgo = new Date(Date.now() - 3_600_000)
		await utimes(dir, hourAgo, hourAgo)
	}
	return dir
}

describe.skipIf(parent === undefined)('gc and orphan top-level sandbox cgroups', () => {
	it('reaps an empty old group no record owns; keeps young, populated and recorded ones', async () => {
		const stateDir = await mkdtemp(join(tmpdir(), 'namzu-orphan-cgroups-'))
		await chmod(stateDir, 0o711)
		try {
			const [orphanId, youngId, busyId, recordedId] = [
				randomId(),
				randomId(),
				randomId(),
				randomId(),
			]
			const orphan = await group(orphanId, true)
			const young = await group(youngId, false)
			const busy = await group(busyId, true)
			const sleeper = spawn('sleep', ['120'], { stdio: 'ignore' })
			sleepers.push(sleeper)
			await writeFile(join(busy, 'cgroup.procs'), String(sleeper.pid))
			await utimes(busy, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000))
			const recorded = await group(recordedId, true)
			// A sandbox of this very (live) process, on record in the state directory.
			const root = join(stateDir, `namzu-sbx-${recordedId}`)
			await mkdir(root, { mode: 0o700 })
			await writeHostClaims({
				...emptyClaims(recordedId, root, await readProcessIdentity(process.pid)),
				cgroupDirs: [recorded],
			})

			const dry = await collectLocalGarbage({ stateDir, dryRun: true })
			expect(dry.cgroups).toContain(orphan)
			expect(existsSync(orphan)).toBe(true)

			const report = await collectLocalGarbage({ stateDir })
			expect(report.cgroups).toContain(orphan)
			for (const kept of [young, busy, recorded]) expect(report.cgroups).not.toContain(kept)
			expect(existsSync(orphan)).toBe(false)
			for (const kept of [young, busy, recorded]) expect(existsSync(kept), kept).toBe(true)
			expect(sleeper.exitCode).toBe(null)
			expect(report.sandboxes).toEqual([])
		} finally {
			await rm(stateDir, { recursive: true, force: true })
		}
	}, 60_000)
})
