/**
 * `createSandboxProvider` is typed per tier: the README's snippets (a local sandbox's `keepAlive`,
 * `cpuLimit`, `diskLimitMb`, egress credentials and decisions, `exec`'s `maxOutputBytes`; a
 * container's `diskLimitMb`) compile against what it returns, and a tier without those options
 * still refuses them.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as root from '../../src/index.js'

type Create = typeof root.createSandboxProvider

describe('package root: createSandboxProvider per tier', () => {
	it("the process tier's provider, sandbox and create options are the local tier's", async () => {
		async function local(createSandboxProvider: Create, token: string) {
			const provider = createSandboxProvider({ backend: { tier: 'process', warmPoolSize: 2 } })
			const sandbox = await provider.create({
				memoryLimitMb: 512,
				maxProcesses: 64,
				cpuLimit: 0.5,
				diskLimitMb: 256,
				egress: { kind: 'static', allowedHosts: ['api.example.com'] },
				egressCredentials: [
					{ host: 'api.example.com', headers: { Authorization: `Bearer ${token}` } },
				],
				onEgressDecision: ({ host, port, verdict, layer }) => [host, port, verdict, layer],
			})
			const kept = await provider.create({ keepAlive: true, keepAliveMs: 60_000 })
			await sandbox.exec('cat', ['big.log'], { maxOutputBytes: 1024 })
			return { provider, sandbox, kept }
		}
		type Made = Awaited<ReturnType<typeof local>>
		expectTypeOf<Made['provider']>().toEqualTypeOf<root.LocalSandboxProvider>()
		expectTypeOf<Made['sandbox']>().toEqualTypeOf<root.LocalSandbox>()
		expectTypeOf<Made['kept']>().toEqualTypeOf<root.LocalSandbox>()
	})

	it("the container tier's provider, sandbox and create options are the container tier's", () => {
		async function container(createSandboxProvider: Create, layout: root.ContainerSandboxLayout) {
			const provider = createSandboxProvider({
				backend: { tier: 'container', image: '/var/lib/images/guest/rootfs' },
				layout,
			})
			const sandbox = await provider.create({ memoryLimitMb: 512, cpuLimit: 1, diskLimitMb: 256 })
			return { provider, sandbox }
		}
		type Made = Awaited<ReturnType<typeof container>>
		expectTypeOf<Made['provider']>().toEqualTypeOf<root.ContainerSandboxProvider>()
		expectTypeOf<Made['sandbox']>().toEqualTypeOf<root.ContainerSandbox>()
	})

	it('a tier without the local options, or a config of no known tier, gets the portable types', () => {
		async function portable(
			createSandboxProvider: Create,
			kubernetes: root.KubernetesBackendConfig,
			config: root.SandboxProviderConfig,
		) {
			const remote = createSandboxProvider({ backend: kubernetes })
			// @ts-expect-error the Kubernetes tier has no disk limit
			await remote.create({ diskLimitMb: 256 })
			return { remote, any: createSandboxProvider(config) }
		}
		type Made = Awaited<ReturnType<typeof portable>>
		expectTypeOf<Made['remote']>().toEqualTypeOf<root.SandboxProvider>()
		expectTypeOf<Made['any']>().toEqualTypeOf<root.SandboxProvider>()
		expectTypeOf<Awaited<ReturnType<Made['remote']['create']>>>().toEqualTypeOf<root.Sandbox>()
	})
})
