import { readdirSync, readFileSync } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentSandbox } from '../../src/agent-entry.js'
import { createSandboxProvider, type SandboxProvider } from '../../src/index.js'
import { defineSandboxConformance } from '../../src/testing/index.js'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'

/** Live processes whose command line mentions `needle` (our agents carry their state dir in argv/env paths). */
function processesMentioning(needle: string): number[] {
	const found: number[] = []
	for (const entry of readdirSync('/proc')) {
		if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
		try {
			const status = readFileSync(`/proc/${entry}/status`, 'utf8')
			if (/^State:\s+Z/m.test(status)) continue
			const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ')
			if (cmdline.includes(needle)) found.push(Number(entry))
		} catch {
			// Exited while we looked.
		}
	}
	return found
}

/**
 * The contract suite against the real local tier: bubblewrap-confined agents from
 * `createSandboxProvider`, cold and from a warm pool. After `close()` nothing may be left: no
 * sandbox state directory and no process of ours.
 */
function localTierSuite(label: string, warmPoolSize: number): void {
	let provider: SandboxProvider | undefined
	let stateDir = ''

	beforeAll(async () => {
		stateDir = await mkdtemp(join(tmpdir(), 'namzu-conformance-local-'))
		// Searchable: on a root host each sandbox's own uid passes through it (see README).
		await chmod(stateDir, 0o711)
		provider = createSandboxProvider({ backend: { tier: 'process', stateDir, warmPoolSize } })
	})

	afterAll(async () => {
		await provider?.close()
		const leftovers = readdirSync(stateDir).filter((name) => name.startsWith('namzu-sbx-'))
		const processes = processesMentioning(stateDir)
		await rm(stateDir, { recursive: true, force: true })
		expect(leftovers, 'sandbox state directories left after close()').toEqual([])
		expect(processes, 'processes left after close()').toEqual([])
	})

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
			guestProcessAlive: async (needle) => processesMentioning(needle).length > 0,
			checkpointProvider: () => {
				if (!provider) throw new Error('provider not created')
				return provider
			},
			// The host hands the agent its work/ groups, so the whole tree of every command ends
			// (capabilities.killsDetachedDescendants defaults to supported).
		},
	)
}

const skipReason = bwrapSkipReason()

describe.skipIf(skipReason !== undefined)('local tier (bubblewrap)', () => {
	localTierSuite('local process tier, bubblewrap', 0)
})

describe.skipIf(skipReason !== undefined)('local tier (bubblewrap) with a warm pool of 4', () => {
	localTierSuite('local process tier, bubblewrap, warm pool of 4', 4)
})
