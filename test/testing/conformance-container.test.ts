import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentSandbox } from '../../src/agent-entry.js'
import { createSandboxProvider, type SandboxProvider } from '../../src/index.js'
import { defineSandboxConformance } from '../../src/testing/index.js'
import {
	CRUN_PATH,
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	processesMentioning,
	RUNSC_PATH,
	removeStateDir,
} from '../backends/container/container-test-support.js'

/**
 * The contract suite against the container tier: the same agent in a runc container from
 * `createSandboxProvider`, cold and from a warm pool, then on crun and on gVisor (runsc). After `close()` nothing may be left: no
 * state directory, no process, no cgroup of any sandbox it made.
 */
function containerTierSuite(
	label: string,
	warmPoolSize: number,
	runtime: 'runc' | 'crun' | 'runsc' = 'runc',
): void {
	let provider: SandboxProvider | undefined
	let stateDir = ''
	const ids: string[] = []

	beforeAll(async () => {
		stateDir = await makeStateDir('conformance')
		provider = createSandboxProvider({
			backend: { tier: 'container', runtime, image: guestImage(), stateDir, warmPoolSize },
			layout: { outputs: { source: { type: 'inImage' } } },
		})
	})

	afterAll(async () => {
		await provider?.close()
		const processes = processesMentioning(stateDir)
		const cgroups = ids.flatMap((id) => cgroupDirsOf(id))
		expect(await removeStateDir(stateDir), 'sandbox state directories left after close()').toEqual(
			[],
		)
		expect(processes, 'processes left after close()').toEqual([])
		expect(cgroups, 'cgroups left after close()').toEqual([])
	})

	defineSandboxConformance(
		{ describe, it, expect },
		async () => {
			if (!provider) throw new Error('provider not created')
			const sandbox = await provider.create()
			ids.push(sandbox.id)
			return { sandbox }
		},
		{
			label,
			supportsRangedAndStreamedReads: true,
			sandboxShape: AgentSandbox.prototype,
			// Every runtime driven directly takes filesystem checkpoints; the cases run by its kinds.
			checkpointProvider: () => {
				if (!provider) throw new Error('provider not created')
				return provider
			},
			// gVisor takes memory checkpoints too: the checkpoint cases run once more with that kind.
			...(runtime === 'runsc' ? { moreCheckpointKinds: ['memory'] as const } : {}),
			// gVisor's guest processes live inside its kernel: the host's /proc cannot see them.
			...(runtime === 'runsc'
				? {}
				: { guestProcessAlive: async (needle: string) => processesMentioning(needle).length > 0 }),
			...(runtime === 'runsc'
				? {
						capabilities: {
							killsDetachedDescendants: {
								supported: false,
								reason:
									"gVisor's kernel takes no host cgroup descriptors, so an aborted command's setsid descendants live until destroy() (the sandbox's own groups bound them from outside)",
							},
						},
					}
				: {}),
		},
	)
}

const skip = containerSkipReason()

describe.skipIf(skip !== undefined)('container tier (runc)', () => {
	containerTierSuite('container tier, runc', 0)
})

describe.skipIf(skip !== undefined)('container tier (runc) with a warm pool of 2', () => {
	containerTierSuite('container tier, runc, warm pool of 2', 2)
})

const crunSkip = containerSkipReason(CRUN_PATH)

describe.skipIf(crunSkip !== undefined)('container tier (crun)', () => {
	containerTierSuite('container tier, crun', 0, 'crun')
})

const runscSkip = containerSkipReason(RUNSC_PATH)

describe.skipIf(runscSkip !== undefined)('container tier (gVisor runsc)', () => {
	containerTierSuite('container tier, runsc', 0, 'runsc')
})
