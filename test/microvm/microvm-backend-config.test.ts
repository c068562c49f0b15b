/** The microVM backend's snapshot-cache bound: its default, and the values refused by name. */
import { describe, expect, it } from 'vitest'
import { DEFAULT_SNAPSHOT_CACHE_MAX_ENTRIES } from '../../src/backends/machine/snapshots/snapshot-eviction.js'
import { resolveMicroVMConfig } from '../../src/backends/microvm/microvm-backend-config.js'
import { SandboxConfigError } from '../../src/contract/errors.js'

describe('MicroVMBackendConfig.snapshotCacheMaxEntries', () => {
	it('defaults to 4 and keeps a value from 1 to 64', () => {
		expect(DEFAULT_SNAPSHOT_CACHE_MAX_ENTRIES).toBe(4)
		expect(resolveMicroVMConfig({ tier: 'microvm', service: 'qemu' }).snapshotCacheMaxEntries).toBe(
			4,
		)
		for (const value of [1, 64]) {
			const config = resolveMicroVMConfig({
				tier: 'microvm',
				service: 'qemu',
				snapshotCacheMaxEntries: value,
			})
			expect(config.snapshotCacheMaxEntries).toBe(value)
		}
	})

	it.each([0, 65, 1.5, -1])('refuses %s, naming the field', (value) => {
		const resolve = () =>
			resolveMicroVMConfig({ tier: 'microvm', service: 'qemu', snapshotCacheMaxEntries: value })
		expect(resolve).toThrow(SandboxConfigError)
		expect(resolve).toThrow(/snapshotCacheMaxEntries/)
	})
})
