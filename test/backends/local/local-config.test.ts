import { tmpdir } from 'node:os'
import { describe, expect, it } from 'vitest'
import {
	type LocalBackendConfig,
	resolveLocalBackendConfig,
} from '../../../src/backends/local/local-backend-config.js'
import { LocalEgressUnsupportedError } from '../../../src/backends/machine/machine-errors.js'
import {
	canServeFromPool,
	resolveMachineSandboxSpec,
} from '../../../src/backends/machine/spec/machine-sandbox-spec.js'
import { SandboxConfigError } from '../../../src/contract/errors.js'

describe('resolveLocalBackendConfig', () => {
	it('fills the documented defaults', () => {
		expect(resolveLocalBackendConfig({ tier: 'process' })).toEqual({
			isolation: 'bubblewrap',
			bwrapPath: '/usr/bin/bwrap',
			nodePath: process.execPath,
			warmPoolSize: 0,
			stateDir: tmpdir(),
			readyTimeoutMs: 10_000,
			sandboxUidRange: { first: 0x7000_0000, count: 65_536 },
			readOnlyPaths: [],
			hiddenPaths: [],
			defaultLimits: 'required',
			maxCheckpoints: 256,
			tools: {
				slirp4netns: '/usr/bin/slirp4netns',
				nft: '/usr/sbin/nft',
				nsenter: '/usr/bin/nsenter',
				ip: '/usr/sbin/ip',
				mkfsExt4: '/usr/sbin/mkfs.ext4',
			},
		})
	})

	it.each([
		['backend.isolation', { isolation: 'docker' }],
		['backend.bwrapPath', { bwrapPath: 'bwrap' }],
		['backend.nodePath', { nodePath: '' }],
		['backend.warmPoolSize', { warmPoolSize: -1 }],
		['backend.warmPoolSize', { warmPoolSize: 1.5 }],
		['backend.stateDir', { stateDir: 'relative/dir' }],
		['backend.readyTimeoutMs', { readyTimeoutMs: 0 }],
		['backend.readyTimeoutMs', { readyTimeoutMs: 2 ** 31 }],
		['backend.sandboxUidRange', { sandboxUidRange: 7 }],
		['backend.sandboxUidRange.first', { sandboxUidRange: { first: 1000, count: 10 } }],
		['backend.sandboxUidRange.count', { sandboxUidRange: { first: 70_000, count: 0 } }],
		['backend.sandboxUidRange', { sandboxUidRange: { first: 0xffff_fff0, count: 100 } }],
		['backend.defaultLimits', { defaultLimits: null }],
		['backend.defaultLimits', { defaultLimits: 'none' }],
		['backend.tools', { tools: null }],
		['backend.tools.slirp4netns', { tools: { slirp4netns: 'slirp4netns' } }],
		['backend.tools.nft', { tools: { nft: '' } }],
		['backend.tools.mkfsExt4', { tools: { mkfsExt4: 3 } }],
		['backend.egress', { egress: { kind: 'deny-all' } }],
		['backend.readyTimeout', { readyTimeout: 5000 }],
		['backend.tools.iptables', { tools: { iptables: '/usr/sbin/iptables' } }],
		['backend.sandboxUidRange.last', { sandboxUidRange: { first: 70_000, count: 1, last: 1 } }],
	])('refuses a bad %s naming the field', (field, override) => {
		const config = { tier: 'process', ...override } as unknown as LocalBackendConfig
		let caught: unknown
		try {
			resolveLocalBackendConfig(config)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(SandboxConfigError)
		expect((caught as SandboxConfigError).field).toBe(field)
	})
})

describe('resolveMachineSandboxSpec', () => {
	it('layers per-call values over provider defaults, deny-all by default', () => {
		expect(
			resolveMachineSandboxSpec(
				{ memoryLimitMb: 128, env: { A: 'b' } },
				{ defaultMemoryLimitMb: 512, defaultMaxProcesses: 32, defaultTimeoutMs: 1000 },
			),
		).toEqual({
			env: { A: 'b' },
			memoryLimitMb: 128,
			maxProcesses: 32,
			timeoutMs: 1000,
			egress: 'deny-all',
		})
	})

	it('carries cpuLimit and diskLimitMb through', () => {
		expect(resolveMachineSandboxSpec({ cpuLimit: 0.5, diskLimitMb: 64 }, {})).toMatchObject({
			cpuLimit: 0.5,
			diskLimitMb: 64,
		})
	})

	it.each(['static', 'resolver'] as const)(
		'resolves %s egress to the proxy, from the call or the provider default',
		(kind) => {
			const egress =
				kind === 'static'
					? { kind, allowedHosts: ['example.com', '*.example.org:8443'] }
					: { kind, resolve: async () => ['example.com'] }
			for (const spec of [
				resolveMachineSandboxSpec({ egress }, {}),
				resolveMachineSandboxSpec({}, { defaultEgress: egress }),
			]) {
				expect(spec.egress).toBe('proxied')
				expect(spec.proxiedEgress).toMatchObject({ kind, credentials: [] })
			}
		},
	)

	it('refuses a malformed allowedHosts entry by its index, from the call or the default', () => {
		const egress = { kind: 'static', allowedHosts: ['example.com', 'bad host'] } as const
		expect(() => resolveMachineSandboxSpec({ egress }, {})).toThrow(
			'egress.allowedHosts[1]: "bad host" is not a host name',
		)
		expect(() => resolveMachineSandboxSpec({}, { defaultEgress: egress })).toThrow(
			'defaultEgress.allowedHosts[1]',
		)
		expect(() =>
			resolveMachineSandboxSpec({ egress: { kind: 'resolver', resolve: 'x' as never } }, {}),
		).toThrow('egress.resolve: must be a function')
	})

	it('refuses proxied egress for a kept-alive sandbox, and proxy options without it', () => {
		const egress = { kind: 'static', allowedHosts: ['example.com'] } as const
		expect(() => resolveMachineSandboxSpec({ egress, keepAlive: true }, {})).toThrow(
			LocalEgressUnsupportedError,
		)
		expect(() =>
			resolveMachineSandboxSpec(
				{ egressCredentials: [{ host: 'example.com', headers: { A: 'b' } }] },
				{},
			),
		).toThrow("egressCredentials: needs a 'static' or 'resolver' egress policy")
		expect(() =>
			resolveMachineSandboxSpec({ egress: { kind: 'allow-all' }, onEgressDecision: () => {} }, {}),
		).toThrow('onEgressDecision: needs')
		expect(() =>
			resolveMachineSandboxSpec(
				{ egress, egressCredentials: [{ host: '*.example.com', headers: { A: 'b' } }] },
				{},
			),
		).toThrow('egressCredentials[0].host')
	})

	it.each([
		['workingDirectory', { workingDirectory: 'relative' }],
		['memoryLimitMb', { memoryLimitMb: 0 }],
		['maxProcesses', { maxProcesses: 2.5 }],
		['timeoutMs', { timeoutMs: -5 }],
		['env', { env: { NAMZU_AGENT_BIND_TOKEN: 'x' } }],
		['env', { env: { 'A=B': 'x' } }],
		['cpuLimit', { cpuLimit: 0 }],
		['cpuLimit', { cpuLimit: Number.NaN }],
		['diskLimitMb', { diskLimitMb: 4 }],
		['diskLimitMb', { diskLimitMb: 64.5 }],
	])('refuses a bad %s naming the field', (field, config) => {
		let caught: unknown
		try {
			resolveMachineSandboxSpec(config, {})
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(SandboxConfigError)
		expect((caught as SandboxConfigError).field).toBe(field)
	})
})

describe('canServeFromPool', () => {
	const pooled = resolveMachineSandboxSpec({}, { defaultMemoryLimitMb: 256 })
	it.each([
		['no overrides', {}, true],
		['only a different timeout', { timeoutMs: 5 }, true],
		['the same memory limit as the default', { memoryLimitMb: 256 }, true],
		['a workingDirectory', { workingDirectory: '/srv/x' }, false],
		['env', { env: { A: '1' } }, false],
		['another memory limit', { memoryLimitMb: 128 }, false],
		['a process limit', { maxProcesses: 8 }, false],
		['allow-all egress', { egress: { kind: 'allow-all' } as const }, false],
		['a cpu limit', { cpuLimit: 1 }, false],
		['a disk limit', { diskLimitMb: 64 }, false],
	])('a request with %s ⇒ %s', (_, config, expected) => {
		expect(
			canServeFromPool(pooled, resolveMachineSandboxSpec(config, { defaultMemoryLimitMb: 256 })),
		).toBe(expected)
	})
})

describe('backend.stateDir that does not exist', () => {
	it('is refused by field with how to create it, and is not created', async () => {
		const { existsSync } = await import('node:fs')
		const { join } = await import('node:path')
		const { createSandboxProvider } = await import('../../../src/index.js')
		const missing = join(tmpdir(), `namzu-missing-state-${process.pid}`, 'state')
		const provider = createSandboxProvider({ backend: { tier: 'process', stateDir: missing } })
		try {
			const refusal = await provider.listCheckpoints().catch((error: unknown) => error)
			expect(refusal).toBeInstanceOf(SandboxConfigError)
			expect(refusal).toMatchObject({ field: 'backend.stateDir', reason: 'invalid-config' })
			expect((refusal as Error).message).toContain(`mkdir -m 0711 -p ${missing}`)
			expect(existsSync(missing)).toBe(false)
		} finally {
			await provider.close()
		}
	})
})
