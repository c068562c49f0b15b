import { describe, expect, it } from 'vitest'
import { resolveLoopbackTarget } from '../../../src/agent/ops/loopback-target.js'
import { refusalOf } from '../refusal-of.js'

describe('resolveLoopbackTarget', () => {
	it.each([
		[{ port: 80 }, undefined],
		[{ host: '::1', port: 65535 }, undefined],
		[{ host: '127.0.0.1', port: 1 }, undefined],
		[{ host: '10.0.0.1', port: 80 }, 'invalid_loopback_target'],
		[{ host: 'localhost', port: 80 }, 'invalid_loopback_target'],
		[{ host: '127.0.0.2', port: 80 }, 'invalid_loopback_target'],
		[{ port: 0 }, 'invalid_loopback_target'],
		[{ port: 65536 }, 'invalid_loopback_target'],
		[{ port: 1.5 }, 'invalid_loopback_target'],
		[{ port: '80' }, 'invalid_loopback_target'],
		[{}, 'invalid_loopback_target'],
	])('%j is refused with %s', (body, expected) => {
		expect(refusalOf(() => resolveLoopbackTarget(body))).toBe(expected)
	})
})
