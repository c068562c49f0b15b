import { describe, expect, it } from 'vitest'
import {
	type ContainerBackendConfig,
	resolveContainerBackendConfig,
} from '../../../src/backends/container/container-backend-config.js'
import {
	ContainerEgressUnsupportedError,
	ContainerSandboxLayoutValidationError,
} from '../../../src/backends/container/container-errors.js'
import { resolveLayout } from '../../../src/backends/container/container-layout.js'
import {
	containerLayoutRefusals,
	createContainerSandboxProvider,
} from '../../../src/backends/container/container-sandbox-provider.js'
import {
	canServeFromContainerPool,
	resolveContainerSandboxSpec,
} from '../../../src/backends/container/container-sandbox-spec.js'
import {
	type ContainerSandboxLayout,
	createSandboxProvider,
	SandboxConfigError,
	type SandboxProviderConfig,
} from '../../../src/index.js'

const bad = <T>(value: unknown): T => value as T
const base: ContainerBackendConfig = { tier: 'container', image: '/images/rootfs' }

function refusalOf(run: () => unknown): unknown {
	try {
		run()
	} catch (error) {
		return error
	}
	return undefined
}

describe('the container backend config', () => {
	it('resolves the defaults: runc at its path, the OS temp dir, a 30 s ready budget, no pool', () => {
		const resolved = resolveContainerBackendConfig(base)
		expect(resolved).toMatchObject({
			runtime: 'runc',
			runtimePath: '/usr/sbin/runc',
			runscPlatform: 'ptrace',
			readyTimeoutMs: 30_000,
			readyPollIntervalMs: 20,
			warmPoolSize: 0,
			defaultLimits: 'required',
			labels: {},
		})
	})

	it.each([
		['runsc', '/usr/bin/runsc'],
		['crun', '/usr/bin/crun'],
	] as const)('finds %s at %s', (runtime, path) => {
		expect(resolveContainerBackendConfig({ ...base, runtime }).runtimePath).toBe(path)
	})

	it.each([
		['docker, by name', { runtime: 'docker' }, 'backend.runtime', /Docker engine/],
		['dockerHost off docker', { dockerHost: 'unix:///x' }, 'backend.dockerHost', /only used/],
		['an unknown runtime', { runtime: 'kata' }, 'backend.runtime', /runc/],
		['a relative image', { image: 'rootfs' }, 'backend.image', /absolute/],
		['a missing image', { image: undefined }, 'backend.image', /string/],
		['a network other than none', { network: 'bridge' }, 'backend.network', /only 'none'/],
		[
			'an unknown key',
			{ hostReachability: 'host-port' },
			'backend.hostReachability',
			/not a setting/,
		],
		['a label with =', { labels: { 'a=b': 'c' } }, 'backend.labels.a=b', /without =/],
		['a pool past its bound', { warmPoolSize: 65 }, 'backend.warmPoolSize', /64/],
	])('refuses %s, naming the field', (_name, patch, field, message) => {
		const error = refusalOf(() => resolveContainerBackendConfig(bad({ ...base, ...patch })))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field })
		expect((error as Error).message).toMatch(message)
	})
})

describe('a container create() config', () => {
	it('takes the portable fields, cpuLimit and diskLimitMb', () => {
		expect(
			resolveContainerSandboxSpec(
				{ env: { A: '1' }, memoryLimitMb: 256, maxProcesses: 64, cpuLimit: 0.5, diskLimitMb: 32 },
				{ defaultTimeoutMs: 1000 },
			),
		).toEqual({
			env: { A: '1' },
			timeoutMs: 1000,
			memoryLimitMb: 256,
			maxProcesses: 64,
			cpuLimit: 0.5,
			diskLimitMb: 32,
			egress: 'deny-all',
		})
	})

	it.each([
		['workingDirectory', { workingDirectory: '/srv/w' }],
		['keepAlive', { keepAlive: true }],
		['readOnlyPaths', { readOnlyPaths: ['/etc'] }],
		['hiddenPaths', { hiddenPaths: ['/workspace/x'] }],
	])('refuses %s by name', (field, config) => {
		const error = refusalOf(() => resolveContainerSandboxSpec(bad(config), {}))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field })
	})

	it('takes allow-all, static and resolver with credentials on runc and crun', () => {
		for (const runtime of ['runc', 'crun'] as const) {
			expect(
				resolveContainerSandboxSpec({ egress: { kind: 'allow-all' } }, {}, runtime),
			).toMatchObject({ egress: 'allow-all' })
			const proxied = resolveContainerSandboxSpec(
				{
					egress: { kind: 'static', allowedHosts: ['a.example'] },
					egressCredentials: [{ host: 'a.example', headers: { Authorization: 'x' } }],
				},
				{},
				runtime,
			)
			expect(proxied).toMatchObject({
				egress: 'proxied',
				proxiedEgress: { kind: 'static', credentials: [{ host: 'a.example' }] },
			})
			const resolver = resolveContainerSandboxSpec(
				{ egress: { kind: 'resolver', resolve: async () => [] } },
				{},
				runtime,
			)
			expect(resolver.proxiedEgress?.kind).toBe('resolver')
		}
		// Credentials without a proxied kind are the local resolver's refusal, by field.
		const error = refusalOf(() =>
			resolveContainerSandboxSpec(
				{ egressCredentials: [{ host: 'a.example', headers: { A: 'x' } }] },
				{},
			),
		)
		expect(error).toMatchObject({ field: 'egressCredentials' })
	})

	it("refuses every kind but deny-all on runsc by name: gVisor's network stack is its own", () => {
		for (const egress of [
			{ kind: 'allow-all' },
			{ kind: 'static', allowedHosts: ['a.example'] },
			{ kind: 'resolver', resolve: async () => [] },
		] as const) {
			const error = refusalOf(() => resolveContainerSandboxSpec({ egress }, {}, 'runsc'))
			expect(error).toBeInstanceOf(ContainerEgressUnsupportedError)
			expect(error).toMatchObject({
				egressKind: egress.kind,
				runtime: 'runsc',
				reason: 'egress-unsupported',
			})
			expect((error as Error).message).toContain('--network=none')
		}
		expect(resolveContainerSandboxSpec({}, {}, 'runsc')).toMatchObject({ egress: 'deny-all' })
		// A provider whose default runsc cannot enforce is refused at construction.
		expect(() =>
			createContainerSandboxProvider(
				{ tier: 'container', runtime: 'runsc', image: '/nonexistent' },
				{ outputs: { source: { type: 'inImage' } } },
				{ defaultEgress: { kind: 'allow-all' } },
			),
		).toThrow(ContainerEgressUnsupportedError)
	})

	it('serves a create from the pool only when it asks for what the pool started with', () => {
		const pooled = resolveContainerSandboxSpec({}, {})
		expect(canServeFromContainerPool(pooled, resolveContainerSandboxSpec({}, {}))).toBe(true)
		for (const config of [
			{ env: { A: '1' } },
			{ memoryLimitMb: 64 },
			{ diskLimitMb: 32 },
			{ cpuLimit: 1 },
			{ egress: { kind: 'allow-all' } },
			{ egress: { kind: 'static', allowedHosts: ['a.example'] } },
		] as const) {
			expect(canServeFromContainerPool(pooled, resolveContainerSandboxSpec(config, {}))).toBe(false)
		}
		// An allow-all pool serves allow-all; a proxied sandbox never comes from a pool.
		const open = resolveContainerSandboxSpec({ egress: { kind: 'allow-all' } }, {})
		expect(canServeFromContainerPool(open, open)).toBe(true)
		const proxied = resolveContainerSandboxSpec(
			{ egress: { kind: 'static', allowedHosts: ['a.example'] } },
			{},
		)
		expect(canServeFromContainerPool(proxied, proxied)).toBe(false)
	})
})

describe('what the container tier refuses of a layout', () => {
	const share = {
		type: 'azureFileShare',
		storageAccountName: 'a',
		shareName: 's',
		storageAccountKey: 'k',
	} as const

	it('collects every reason: an Azure share, two writable host dirs, a pool holding one', () => {
		const layout = resolveLayout({
			outputs: { source: { type: 'hostDir', hostPath: '/srv/out' } },
			scratch: { source: { type: 'hostDir', hostPath: '/srv/scratch' } },
			uploads: { source: share },
		})
		expect(containerLayoutRefusals(layout, 1)).toEqual([
			"layout.uploads.source: 'azureFileShare' is served by the ACI standby pool only; use 'hostDir' or 'inImage'",
			"layout.outputs and layout.scratch are both writable host directories; a sandbox is handed one (make the other 'inImage')",
			'layout.outputs is a writable host directory, which one live sandbox holds at a time; a warm pool (backend.warmPoolSize) would hold it ahead of create()',
		])
	})

	it('accepts inImage everywhere and read-only host dirs with a pool', () => {
		const layout = resolveLayout({
			outputs: { source: { type: 'inImage' } },
			uploads: { source: { type: 'hostDir', hostPath: '/srv/in' } },
		})
		expect(containerLayoutRefusals(layout, 4)).toEqual([])
	})
})

describe('createSandboxProvider for the container tier', () => {
	const layout = { outputs: { source: { type: 'inImage' } } } as const

	it('builds a provider named by tier and runtime without contacting anything', async () => {
		const provider = createSandboxProvider({ backend: { ...base, runtime: 'runsc' }, layout })
		expect([provider.id, provider.name, provider.environment, provider.workspaceModes]).toEqual([
			'namzu-container-runsc',
			'@namzu/sandbox:container:runsc',
			'linux-namespace',
			['ephemeral'],
		])
		await provider.close()
	})

	it('refuses a container backend without a layout, and an invalid layout with every reason', () => {
		const missing = refusalOf(() =>
			createSandboxProvider(bad<SandboxProviderConfig>({ backend: base })),
		)
		expect(missing).toMatchObject({ name: 'SandboxConfigError', field: 'layout' })
		const invalid = refusalOf(() =>
			createSandboxProvider({
				backend: base,
				layout: bad<ContainerSandboxLayout>({ uploads: { source: { type: 'x' } } }),
			}),
		)
		expect(invalid).toBeInstanceOf(ContainerSandboxLayoutValidationError)
		expect((invalid as ContainerSandboxLayoutValidationError).reasons).toHaveLength(2)
	})

	it('builds the ACI standby-pool provider without asking for a token or calling ARM', async () => {
		let tokens = 0
		const provider = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'aci-standby-pool',
				subscriptionId: 'sub',
				resourceGroup: 'rg',
				location: 'westeurope',
				standbyPoolResourceId:
					'/subscriptions/sub/resourceGroups/rg/providers/Microsoft.StandbyPool/standbyContainerGroupPools/pool',
				containerGroupProfileResourceId:
					'/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroupProfiles/profile',
				getArmToken: async () => {
					tokens += 1
					return 'token'
				},
			},
			layout,
		})
		expect([provider.id, provider.name]).toEqual([
			'namzu-container-aci-standby-pool',
			'@namzu/sandbox:container:aci-standby-pool',
		])
		await provider.close()
		expect(tokens).toBe(0)
	})

	it('routes each arm without a double cast in the selector', async () => {
		const { readFile } = await import('node:fs/promises')
		const source = await readFile(
			new URL('../../../src/create-sandbox-provider.ts', import.meta.url),
			'utf8',
		)
		expect(source).not.toMatch(/as unknown as/)
		expect(source).not.toMatch(/\bas any\b/)
	})
})
