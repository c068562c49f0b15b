import { readdir } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentSandbox } from '../../src/agent-entry.js'
import { DOCKER_SANDBOX_LABEL } from '../../src/backends/container/docker/docker-container-body.js'
import { createSandboxProvider, type SandboxProvider } from '../../src/index.js'
import { defineSandboxConformance } from '../../src/testing/index.js'
import { makeStateDir, removeStateDir } from '../backends/container/container-test-support.js'
import {
	dockerSkipReason,
	ensureGuestImage,
	type PodmanService,
	startPodmanService,
} from '../backends/container/docker/podman-service.js'

/**
 * The contract suite against the container tier on a Docker engine (Podman's Docker-compatible
 * service, as root), cold and from a warm pool. After `close()` no container of ours is left in
 * the engine and no state directory on the host.
 */
function dockerTierSuite(label: string, warmPoolSize: number): void {
	let service: PodmanService | undefined
	let provider: SandboxProvider | undefined
	let stateDir = ''

	beforeAll(async () => {
		service = await startPodmanService()
		const image = await ensureGuestImage(service.client)
		stateDir = await makeStateDir('docker-conformance')
		provider = createSandboxProvider({
			backend: {
				tier: 'container',
				runtime: 'docker',
				image,
				dockerHost: service.dockerHost,
				stateDir,
				warmPoolSize,
			},
			layout: { outputs: { source: { type: 'inImage' } } },
		})
	}, 600_000)

	afterAll(async () => {
		try {
			await provider?.close()
			const left = await service?.client.list({
				method: 'GET',
				path: '/containers/json',
				query: { all: 'true', filters: JSON.stringify({ label: [`${DOCKER_SANDBOX_LABEL}=1`] }) },
			})
			expect(left, 'containers left after close()').toEqual([])
			expect(await readdir(stateDir), 'state directories left after close()').toEqual([])
			expect(await removeStateDir(stateDir)).toEqual([])
		} finally {
			await service?.stop()
		}
	}, 120_000)

	defineSandboxConformance(
		{ describe, it, expect },
		async () => {
			if (!provider) throw new Error('provider not created')
			return { sandbox: await provider.create() }
		},
		{
			label,
			supportsRangedAndStreamedReads: true,
			sandboxShape: AgentSandbox.prototype,
			capabilities: {
				killsDetachedDescendants: {
					supported: false,
					reason:
						"the engine's cgroups are its own (no per-command group is delegated to the agent), so an aborted command's setsid descendants live until destroy() removes the container",
				},
			},
		},
	)
}

const skip = dockerSkipReason()

describe.skipIf(skip !== undefined)('container tier on a Docker engine (Podman, root)', () => {
	dockerTierSuite('container tier, docker', 0)
})

describe.skipIf(skip !== undefined)('container tier on a Docker engine, warm pool', () => {
	dockerTierSuite('container tier, docker, warm', 2)
})
