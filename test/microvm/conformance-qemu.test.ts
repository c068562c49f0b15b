/**
 * The contract suite on the QEMU microVM tier. Every case boots its own guest (the suite destroys
 * each), which under TCG costs 20–70 s a case on a loaded 2-core host; with a warm pool of 2 the
 * whole suite takes far longer than the default run can afford. So it runs only with
 * `NAMZU_MICROVM_CONFORMANCE=1` (and qemu plus the `--vm` image present), which `.ci/run` sets for
 * a step of its own after the default suite; the default run has test/microvm/qemu-microvm.test.ts,
 * which boots one guest for exec, files, PTY, TCP and egress. Measured 2026-12-05 (load average
 * ~22, warm pool 2): 35 cases in 705 s, 34 passed and the one this tier declares below it lacks
 * (setsid descendants of an aborted exec) skipped.
 */
import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentSandbox } from '../../src/agent-entry.js'
import { defaultImageDir } from '../../src/backends/microvm/microvm-image.js'
import { createSandboxProvider, type SandboxProvider } from '../../src/index.js'
import { defineSandboxConformance } from '../../src/testing/index.js'

function qemuPresent(): boolean {
	try {
		execFileSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' })
		return true
	} catch {
		return false
	}
}

const enabled =
	process.env.NAMZU_MICROVM_CONFORMANCE === '1' &&
	qemuPresent() &&
	(await defaultImageDir()) !== undefined

describe.skipIf(!enabled)('microVM tier (QEMU) conformance', () => {
	let provider: SandboxProvider | undefined

	beforeAll(() => {
		provider = createSandboxProvider({
			backend: { tier: 'microvm', service: 'qemu', warmPoolSize: 2 },
			defaultMemoryLimitMb: 512,
		})
	})

	afterAll(async () => {
		await provider?.close()
	}, 300_000)

	defineSandboxConformance(
		{ describe, it, expect },
		async () => {
			if (!provider) throw new Error('provider not created')
			return { sandbox: await provider.create() }
		},
		{
			label: 'microVM tier, QEMU',
			supportsRangedAndStreamedReads: true,
			sandboxShape: AgentSandbox.prototype,
			// The checkpoint cases by the provider's kinds: memory here (fork, rollback, siblings).
			checkpointProvider: () => {
				if (!provider) throw new Error('provider not created')
				return provider
			},
			// A case includes its guest's boot (TCG).
			timeoutMs: 600_000,
			capabilities: {
				killsDetachedDescendants: {
					supported: false,
					reason:
						"the guest's init hands the agent no workload cgroup descriptors yet, so an aborted command's setsid descendants live until destroy() (the VM's end takes them)",
				},
			},
		},
	)
})
