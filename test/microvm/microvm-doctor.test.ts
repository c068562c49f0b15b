import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
	describeMicroVMEgress,
	describeMicroVMSnapshotCache,
	formatMicroVMReport,
} from '../../src/backends/microvm/microvm-doctor.js'

const base = {
	qemu: { ok: true, detail: 'QEMU emulator version 7.2' },
	image: { ok: true, detail: '/img' },
}

describe('doctor on the microVM tier', () => {
	it('says which egress kinds it serves, and why it refuses the others', () => {
		const text = formatMicroVMReport({
			...base,
			egress: {
				served: ['deny-all', 'static', 'resolver'],
				refused: [{ kind: 'allow-all', why: 'needs slirp4netns at /usr/bin/slirp4netns' }],
			},
		})
		expect(text).toContain('  ok   egress            deny-all, static, resolver\n')
		expect(text).toContain('  NO   egress allow-all  needs slirp4netns at /usr/bin/slirp4netns\n')
	})

	it('serves deny-all on any host, and every kind it does not serve is refused with a reason', async () => {
		const support = await describeMicroVMEgress()
		expect(support.served[0]).toBe('deny-all')
		expect([...support.served, ...support.refused.map((entry) => entry.kind)].sort()).toEqual([
			'allow-all',
			'deny-all',
			'resolver',
			'static',
		])
		for (const { why } of support.refused) expect(why).toMatch(/needs /)
	})

	it('prints the snapshot cache: where, entries and bytes, and whether warm start works here', () => {
		const cache = { dir: '/tmp/namzu-snapshot-cache', entries: 2, bytes: 3 * 1024 ** 3 }
		const usable = formatMicroVMReport({
			...base,
			egress: { served: ['deny-all'], refused: [] },
			snapshotCache: {
				...cache,
				warmStart: { usable: true, detail: 'usable here (startFromSnapshot: true)' },
			},
		})
		expect(usable).toContain(
			'  ok   snapshot cache    /tmp/namzu-snapshot-cache: 2 entries, 3.0 GiB; warm start usable here (startFromSnapshot: true)\n',
		)
		const refused = formatMicroVMReport({
			...base,
			egress: { served: ['deny-all'], refused: [] },
			snapshotCache: {
				...cache,
				entries: 1,
				bytes: 512,
				warmStart: { usable: false, detail: 'not usable here: needs qemu' },
			},
		})
		expect(refused).toContain(
			'  NO   snapshot cache    /tmp/namzu-snapshot-cache: 1 entry, 512 B; warm start not usable here: needs qemu\n',
		)
	})

	it("counts a state directory's cache entries and their bytes, not partial builds or lock files", async () => {
		const stateDir = await mkdtemp(join(tmpdir(), 'namzu-vmdoctor-test-'))
		try {
			const cache = join(stateDir, 'namzu-snapshot-cache')
			const entry = join(cache, '0123456789abcdef0123456789abcdef')
			await mkdir(entry, { recursive: true })
			await writeFile(join(entry, 'state.bin'), Buffer.alloc(64 * 1024, 1))
			await mkdir(join(cache, '.partial-1-1-0a0b0c0d'))
			await writeFile(join(cache, '.partial-1-1-0a0b0c0d', 'half'), Buffer.alloc(64 * 1024, 1))
			await writeFile(join(cache, '.lock-0123456789abcdef0123456789abcdef'), '')
			const report = await describeMicroVMSnapshotCache({ qemu: true, image: true }, stateDir)
			expect(report.dir).toBe(cache)
			expect(report.entries).toBe(1)
			expect(report.bytes).toBeGreaterThanOrEqual(64 * 1024)
			expect(report.bytes).toBeLessThan(128 * 1024)
			expect(report.warmStart.usable).toBe(true)
			const missing = await describeMicroVMSnapshotCache({ qemu: false, image: false }, stateDir)
			expect(missing.warmStart).toEqual({
				usable: false,
				detail: 'not usable here: needs qemu, the --vm guest image',
			})
		} finally {
			await rm(stateDir, { recursive: true, force: true })
		}
	})
})
