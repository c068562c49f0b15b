/**
 * The pure parts of a Docker sandbox's container: the limits checked against what the engine
 * recorded (a rootless Podman on cgroup v1 records Memory 0 and PidsLimit 0 for what it was asked:
 * measured here), and the host's hard limits the engine is never asked to exceed.
 */
import { describe, expect, it } from 'vitest'
import { parseHardLimits } from '../../../../src/backends/container/docker/docker-container-body.js'
import { droppedLimits } from '../../../../src/backends/container/docker/docker-instance.js'

describe('the limits the engine recorded', () => {
	const asked = { Memory: 268435456, MemorySwap: 268435456, PidsLimit: 64, CpuShares: 1024 }

	it('names every limit a rootless cgroup v1 engine dropped', () => {
		expect(droppedLimits(asked, { Memory: 0, MemorySwap: 0, PidsLimit: 0 })).toEqual([
			'Memory',
			'MemorySwap',
			'PidsLimit',
		])
		expect(droppedLimits({ ...asked, NanoCpus: 5e8 }, {})).toEqual([
			'Memory',
			'MemorySwap',
			'PidsLimit',
			'NanoCpus',
		])
	})

	it('finds nothing dropped when the engine kept what it was asked', () => {
		expect(droppedLimits(asked, { ...asked, CpuShares: 2 })).toEqual([])
	})
})

describe("the host's hard limits", () => {
	const limits = [
		'Limit                     Soft Limit           Hard Limit           Units     ',
		'Max processes             96369                96369                processes ',
		'Max open files            1024                 20000                files     ',
	].join('\n')

	it('takes the hard values, under the ceilings', () => {
		expect(parseHardLimits(limits)).toEqual({ nofile: 20000, nproc: 16384 })
	})

	it('takes the ceiling for an unlimited or missing line', () => {
		expect(
			parseHardLimits(
				'Max processes             unlimited            unlimited            processes',
			),
		).toEqual({ nofile: 65536, nproc: 16384 })
	})
})
