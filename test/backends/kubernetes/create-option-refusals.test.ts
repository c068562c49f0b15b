// Per-sandbox create options the Kubernetes tier cannot honour are refused by name, before any
// request is sent.
import { describe, expect, it } from 'vitest'
import {
	createKubernetesSandboxProvider,
	refuseUnsupportedCreateOptions,
} from '../../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import { SandboxConfigError, type SandboxCreateConfig } from '../../../src/index.js'
import { KubernetesCreateOptionUnsupportedError } from '../../../src/kubernetes-entry.js'
import { base } from './acquire-config.js'
import { rejectionError } from './error-chain.js'
import { scriptedApi } from './scripted-api-port.js'

describe('per-sandbox options', () => {
	it.each([
		['env', { env: { A: '1' } }],
		['memoryLimitMb', { memoryLimitMb: 256 }],
		['maxProcesses', { maxProcesses: 10 }],
		['egress', { egress: { kind: 'deny-all' } }],
	])('refuses %s by name', (option, createConfig) => {
		let caught: unknown
		try {
			refuseUnsupportedCreateOptions(createConfig as never)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(KubernetesCreateOptionUnsupportedError)
		expect((caught as KubernetesCreateOptionUnsupportedError).option).toBe(option)
		expect((caught as Error).message).toContain(option)
	})

	const refused: Array<[string, SandboxCreateConfig]> = [
		['env', { env: { A: '1' } }],
		['memoryLimitMb', { memoryLimitMb: 256 }],
		['maxProcesses', { maxProcesses: 10 }],
		['egress', { egress: { kind: 'deny-all' } }],
	]

	it.each(refused)(
		'refuses %s at create() by name, before any request is sent',
		async (option, createConfig) => {
			const api = scriptedApi(() => ({}))
			const provider = createKubernetesSandboxProvider(base, {}, { api: api.port })
			const error = await rejectionError(provider.create(createConfig))
			expect(error).toBeInstanceOf(KubernetesCreateOptionUnsupportedError)
			expect(error).toMatchObject({ option })
			expect((error as Error).message).toContain(option)
			expect(api.calls).toEqual([])
		},
	)

	it.each([
		['timeoutMs', { timeoutMs: Number.NaN }, 'NaN'],
		['timeoutMs', { timeoutMs: -1 }, '-1'],
		['signal', { signal: 'stop' }, '"stop"'],
		['memoryLimitMb', { memoryLimitMb: null }, 'null'],
		['egress', { egress: null }, 'null'],
		['config', null, 'null'],
	])(
		'refuses a malformed %s (%s) by name before any request is sent',
		async (field, config, received) => {
			const api = scriptedApi(() => ({}))
			const provider = createKubernetesSandboxProvider(base, {}, { api: api.port })
			const error = await rejectionError(provider.create(config as never))
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field, received })
			expect(api.calls).toEqual([])
		},
	)

	it('refuses malformed provider defaults at construction', () => {
		expect(() => createKubernetesSandboxProvider(base, { defaultTimeoutMs: Number.NaN })).toThrow(
			SandboxConfigError,
		)
	})
})
