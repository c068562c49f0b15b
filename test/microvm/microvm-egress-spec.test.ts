import { describe, expect, it } from 'vitest'
import { resolveMicroVMSpec } from '../../src/backends/microvm/microvm-sandbox-provider.js'
import { SandboxConfigError } from '../../src/contract/errors.js'

describe('microVM egress at create()', () => {
	it('takes static and resolver policies through the machine layer resolution, before any boot', () => {
		const onEgressDecision = () => undefined
		const spec = resolveMicroVMSpec(
			{
				egress: { kind: 'static', allowedHosts: ['api.example.test'] },
				egressCredentials: [{ host: 'api.example.test', headers: { Authorization: 'x' } }],
				onEgressDecision,
			},
			{},
		)
		expect(spec.egress).toMatchObject({ kind: 'static', onDecision: onEgressDecision })
		expect(spec.egress?.credentials).toHaveLength(1)
		const resolver = resolveMicroVMSpec(
			{},
			{ defaultEgress: { kind: 'resolver', resolve: async () => ['api.example.test'] } },
		)
		expect(resolver.egress?.kind).toBe('resolver')
		// Positive control: deny-all (and nothing asked) starts no proxy.
		expect(resolveMicroVMSpec({}, {}).egress).toBeUndefined()
		expect(resolveMicroVMSpec({ egress: { kind: 'deny-all' } }, {}).egress).toBeUndefined()
	})

	it('takes allow-all (no proxy), and refuses credentials or a decision callback without a proxied policy', () => {
		const open = resolveMicroVMSpec({ egress: { kind: 'allow-all' } }, {})
		expect(open).toMatchObject({ allowAll: true })
		expect(open.egress).toBeUndefined()
		expect(() =>
			resolveMicroVMSpec(
				{
					egress: { kind: 'allow-all' },
					egressCredentials: [{ host: 'a.test', headers: { A: 'b' } }],
				},
				{},
			),
		).toThrow(SandboxConfigError)
		expect(resolveMicroVMSpec({}, {}).allowAll).toBeUndefined()
		expect(() =>
			resolveMicroVMSpec({ egressCredentials: [{ host: 'a.test', headers: { A: 'b' } }] }, {}),
		).toThrow(SandboxConfigError)
		expect(() => resolveMicroVMSpec({ onEgressDecision: () => undefined }, {})).toThrow(
			SandboxConfigError,
		)
	})
})
