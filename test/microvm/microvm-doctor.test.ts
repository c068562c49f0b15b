import { describe, expect, it } from 'vitest'
import {
	describeMicroVMEgress,
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
})
