import { describe, expect, it } from 'vitest'
import {
	cgroupRequestFor,
	DEFAULT_MAX_PROCESSES,
	defaultMemoryLimitMb,
	parseCpuLimit,
	parseDiskLimitMb,
	resolveSandboxLimits,
	tmpfsSizesFor,
} from '../../../../src/backends/machine/spec/sandbox-limits.js'
import { SandboxConfigError } from '../../../../src/contract/errors.js'

const GIB = 1024 ** 3
const MIB = 1024 ** 2

describe('defaultMemoryLimitMb', () => {
	it.each([
		[24 * GIB, 2048],
		[4 * GIB, 2048],
		[2 * GIB, 1024],
		[512 * MIB, 256],
		[1 * MIB, 1],
	])('a host with %d bytes gets %d MiB (2048, capped at half the RAM)', (total, expected) => {
		expect(defaultMemoryLimitMb(total)).toBe(expected)
	})
})

describe('tmpfsSizesFor', () => {
	it('gives /tmp a half, /var/tmp a quarter, /dev/shm an eighth and /run a sixteenth', () => {
		expect(tmpfsSizesFor(2048)).toEqual({
			'/tmp': 1024 * MIB,
			'/var/tmp': 512 * MIB,
			'/dev/shm': 256 * MIB,
			'/run': 128 * MIB,
		})
	})

	it.each([16, 256, 2048, 5000])('keeps all of them together under a %d MiB limit', (limit) => {
		const total = Object.values(tmpfsSizesFor(limit)).reduce((sum, size) => sum + size, 0)
		expect(total).toBeLessThan(limit * MIB)
	})

	it('never plans a tmpfs below 1 MiB', () => {
		expect(Math.min(...Object.values(tmpfsSizesFor(1)))).toBe(MIB)
	})
})

describe('resolveSandboxLimits', () => {
	const host = { totalMemoryBytes: 24 * GIB }

	it('fills every default and marks it as such', () => {
		expect(resolveSandboxLimits({}, host)).toEqual({
			memoryLimitMb: 2048,
			memorySource: 'default',
			maxProcesses: DEFAULT_MAX_PROCESSES,
			processesSource: 'default',
			cpuShares: 1024,
			cpuWeight: 100,
			tmpfs: tmpfsSizesFor(2048),
		})
	})

	it('keeps what was asked for, and sizes the tmpfs mounts from the requested memory', () => {
		const limits = resolveSandboxLimits(
			{ memoryLimitMb: 256, maxProcesses: 64, cpuLimit: 1.5 },
			host,
		)
		expect(limits).toMatchObject({
			memoryLimitMb: 256,
			memorySource: 'requested',
			maxProcesses: 64,
			processesSource: 'requested',
			cpuLimit: 1.5,
			tmpfs: tmpfsSizesFor(256),
		})
	})
})

describe('cgroupRequestFor', () => {
	const host = { totalMemoryBytes: 24 * GIB }

	it('lists the controllers that only carry defaults', () => {
		const request = cgroupRequestFor(resolveSandboxLimits({}, host), { defaultLimits: 'required' })
		expect(request.defaultsOnly).toEqual(['memory', 'pids', 'cpu'])
		expect(request).toMatchObject({ memoryLimitMb: 2048, maxProcesses: 512, cpuShares: 1024 })
		expect(request.cpuLimit).toBeUndefined()
	})

	it('treats a requested limit as required whatever the mode', () => {
		const limits = resolveSandboxLimits({ memoryLimitMb: 64, cpuLimit: 0.5 }, host)
		const request = cgroupRequestFor(limits, { defaultLimits: 'best-effort' })
		expect(request.defaultsOnly).toEqual(['pids'])
		expect(request).toMatchObject({
			memoryLimitMb: 64,
			cpuLimit: 0.5,
			defaultLimits: 'best-effort',
		})
	})
})

describe('create-option validation', () => {
	it.each([0.5, 1, 2.25, 0.01])('accepts cpuLimit %d', (value) => {
		expect(parseCpuLimit(value)).toBe(value)
	})

	it.each([
		[0, 'got 0'],
		[-1, 'got -1'],
		[Number.NaN, 'got NaN'],
		[Number.POSITIVE_INFINITY, 'got Infinity'],
		['2', 'got "2"'],
		[null, 'got null'],
		[5000, 'got 5000'],
	])('refuses cpuLimit %s, naming the parameter and the value', (value, shown) => {
		let error: unknown
		try {
			parseCpuLimit(value)
		} catch (caught) {
			error = caught
		}
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect((error as SandboxConfigError).message).toContain('cpuLimit')
		expect((error as SandboxConfigError).message).toContain(shown)
	})

	it.each([16, 1024])('accepts diskLimitMb %d', (value) => {
		expect(parseDiskLimitMb(value)).toBe(value)
	})

	it.each([
		[0, 'got 0'],
		[8, 'got 8'],
		[1.5, 'got 1.5'],
		[Number.NaN, 'got NaN'],
		[null, 'got null'],
		['64', 'got "64"'],
	])('refuses diskLimitMb %s, naming the parameter and the value', (value, shown) => {
		expect(() => parseDiskLimitMb(value)).toThrow(SandboxConfigError)
		expect(() => parseDiskLimitMb(value)).toThrow(/diskLimitMb/)
		expect(() => parseDiskLimitMb(value)).toThrow(shown)
	})

	it('leaves both unset when not given', () => {
		expect(parseCpuLimit(undefined)).toBeUndefined()
		expect(parseDiskLimitMb(undefined)).toBeUndefined()
	})
})
