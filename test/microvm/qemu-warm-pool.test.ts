/**
 * The QEMU microVM tier's warm pool (`warmPoolSize`), served through the machine layer's pool, for
 * real under TCG: a create is handed the guest the pool booted before it was called (its id and
 * its start were told before the create), the pool boots a replacement, and destroy takes the
 * handed-out guest's QEMU, cgroups and directory; close takes the replacement. Two boots.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { stateRootIdOf } from '../../src/backends/microvm/qemu-host-claims.js'
import { createMicroVMSandboxProvider, type MicroVMGuestStart } from '../../src/microvm-entry.js'
import { cgroupDirsOf, processesMentioning } from '../backends/container/container-test-support.js'
import { waitFor } from '../backends/local/local-test-support.js'
import { guestDirsOf, imageKernel, qemuRunnable } from './qemu-test-host.js'

/** Two TCG boots on a loaded 2-core host. */
const CASE_MS = 900_000
const BOOT_MS = 400_000

describe.skipIf(!qemuRunnable)('microVM tier on QEMU: the warm pool', () => {
	it(
		'a create is handed a pre-booted guest, the pool boots a replacement, and destroy and close leave nothing',
		async () => {
			const stateDir = mkdtempSync(join(tmpdir(), 'namzu-vmpool-test-'))
			const ready: string[] = []
			const starts: MicroVMGuestStart[] = []
			const errors: unknown[] = []
			const provider = createMicroVMSandboxProvider(
				{ tier: 'microvm', service: 'qemu', stateDir, warmPoolSize: 1 },
				{ defaultMemoryLimitMb: 512 },
				{
					onWarmSandboxReady: (id) => ready.push(id),
					onGuestStart: (event) => starts.push(event),
					onBackgroundError: (error) => errors.push(error),
				},
			)
			try {
				await waitFor(() => ready.length === 1, BOOT_MS)
				const pooled = ready[0] ?? ''
				const startsBefore = starts.length
				const sandbox = await provider.create()
				// The guest booted before the create: no guest started for the create itself.
				expect(sandbox.id).toBe(pooled)
				expect(starts.slice(0, startsBefore).map((event) => event.sandboxId)).toContain(pooled)
				expect(starts.slice(startsBefore).map((event) => event.sandboxId)).not.toContain(pooled)
				const guest = await sandbox.exec('uname', ['-r'])
				expect(guest.stdout.trim()).toBe(imageKernel)

				// The pool refills with a guest of its own.
				await waitFor(() => ready.length === 2, BOOT_MS)
				const replacement = ready[1] ?? ''
				expect(replacement).not.toBe(pooled)
				expect(guestDirsOf(replacement, stateDir)).toHaveLength(1)

				const [dir] = guestDirsOf(pooled, stateDir)
				if (dir === undefined) throw new Error('no guest directory')
				await sandbox.destroy()
				expect(guestDirsOf(pooled, stateDir)).toEqual([])
				await waitFor(() => processesMentioning(dir).length === 0)
				expect(cgroupDirsOf(stateRootIdOf(pooled) ?? '')).toEqual([])
				// Positive control: the replacement still runs.
				expect(
					processesMentioning(guestDirsOf(replacement, stateDir)[0] ?? '').length,
				).toBeGreaterThan(0)
			} finally {
				await provider.close()
			}
			expect(errors).toEqual([])
			// Close took the replacement: no guest directory, QEMU or cgroup of this provider is left.
			expect(readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))).toEqual([])
			await waitFor(() => processesMentioning(stateDir).length === 0)
			for (const id of ready) expect(cgroupDirsOf(stateRootIdOf(id) ?? '')).toEqual([])
			rmSync(stateDir, { recursive: true, force: true })
		},
		CASE_MS,
	)
})
