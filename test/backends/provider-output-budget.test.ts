/**
 * Each provider hands its sandboxes one budget of exec output held on the host
 * (`execOutputBudgetBytes`): two sandboxes of one provider, one holding output while the other
 * floods, and the flood is cut by name (`outputTruncation: 'output-budget'`) — on the local tier
 * (real bubblewrap) and the Kubernetes tier (the real create() path: a scripted API, a real
 * deprivileged agent). A bad value is refused by name. The scene and its checks are shared
 * (`test/host/exec/output-budget-scenario.ts`).
 */
import { randomUUID } from 'node:crypto'
import { accessSync, constants } from 'node:fs'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createKubernetesSandboxProvider } from '../../src/backends/kubernetes/kubernetes-sandbox-provider.js'
import {
	createLocalSandboxProvider,
	type Sandbox,
	SandboxConfigError,
	type SandboxProvider,
} from '../../src/index.js'
import { expectBudgetHeld, playBudgetScene } from '../host/exec/output-budget-scenario.js'
import { launchGuestAgent, SETPRIV_CHAIN } from './kubernetes/launched-guest.js'
import { scriptedBackendBase } from './kubernetes/local-guest-config.js'
import { pod, readyClaim, scriptedApi } from './kubernetes/scripted-api-port.js'

const MiB = 1024 * 1024
const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined)
})

function bwrapMissing(): boolean {
	try {
		accessSync('/usr/bin/bwrap', constants.X_OK)
		return false
	} catch {
		if (process.env.CI) throw new Error('/usr/bin/bwrap is missing on CI')
		return true
	}
}

async function two(provider: SandboxProvider): Promise<[Sandbox, Sandbox]> {
	const a = await provider.create()
	cleanups.push(() => a.destroy())
	const b = await provider.create()
	cleanups.push(() => b.destroy())
	return [a, b]
}

describe('the provider-wide budget of exec output', () => {
	it('is refused by name when it is not a positive integer', () => {
		for (const bad of [0, -1, 1.5, Number.NaN]) {
			expect(() =>
				createLocalSandboxProvider({ tier: 'process' }, { execOutputBudgetBytes: bad }),
			).toThrow(SandboxConfigError)
		}
	})

	it.skipIf(bwrapMissing())(
		'is shared by the local provider’s sandboxes: a flood is cut while another sandbox holds the rest',
		async () => {
			const stateDir = await mkdtemp(join(tmpdir(), 'namzu-budget-'))
			await chmod(stateDir, 0o711)
			cleanups.push(() => rm(stateDir, { recursive: true, force: true }))
			const provider = createLocalSandboxProvider(
				{ tier: 'process', stateDir },
				{ execOutputBudgetBytes: 8 * MiB },
			)
			cleanups.push(() => provider.close())
			const [a, b] = await two(provider)
			const scene = {
				a,
				b,
				flagPath: join(a.rootDir, 'flag'),
				budgetBytes: 8 * MiB,
				heldBytes: 6 * MiB,
				floodBytes: 6 * MiB,
			}
			expectBudgetHeld(scene, await playBudgetScene(scene))
		},
	)

	it('is shared by the Kubernetes provider’s sandboxes the same way', async () => {
		const token = randomUUID()
		const guest = await launchGuestAgent({ token, launcher: SETPRIV_CHAIN })
		cleanups.push(() => guest.stop())
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE' || call.verb === 'PATCH') return {}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-budget')
			return pod(token, '127.0.0.1')
		})
		const provider = createKubernetesSandboxProvider(
			{
				...scriptedBackendBase,
				agentAddress: 'pod-ip',
				agentPort: guest.port,
				readyTimeoutMs: 10_000,
			},
			{ execOutputBudgetBytes: 8 * MiB },
			{ api: api.port },
		)
		const [a, b] = await two(provider)
		const scene = {
			a,
			b,
			flagPath: join(guest.workspace, `flag-${token}`),
			budgetBytes: 8 * MiB,
			heldBytes: 6 * MiB,
			floodBytes: 6 * MiB,
		}
		expectBudgetHeld(scene, await playBudgetScene(scene))
	})
})
