// A tier that keeps its unit after an unconfirmable cancellation (a Kubernetes workspace): the
// cancellation is REAL — the command is frozen so the agent cannot confirm its kill
// (fenced-agent.ts) — and the handle records that nothing was retired instead of fencing itself.
// A tier that names a self-fenced guest gets its own error for the next reservation instead.
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { SandboxRetirementObservation } from '../../../src/contract/retirement.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import {
	RemoteCancellationUnknownError,
	SandboxError,
	SandboxRetiredError,
} from '../../../src/index.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { execUntilUnconfirmed, FENCE_AGENT_ENV } from '../../helpers/fenced-agent.js'
import { canFreeze } from '../../helpers/frozen-process.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined)
})

/** The controller's cancel-confirm window, shortened: the guest's own answer comes in 0.5 s. */
const SHORT_CONFIRM = { cancelConfirmTimeoutMs: 1_500 }

class FencedGuestTestError extends SandboxError {
	override readonly name = 'FencedGuestTestError'
	constructor(readonly operation: string) {
		super(`fenced (${operation})`, 'fenced-guest-test')
	}
}

async function keptSandbox(options: { fencedGuest?: boolean } = {}) {
	const agent: StartedAgent = await startAgent({ env: { ...FENCE_AGENT_ENV } })
	cleanups.push(() => agent.stop())
	const retire = vi.fn(
		async (): Promise<SandboxRetirementObservation> => ({ accepted: true, reason: 'deleted' }),
	)
	const sandbox = createAgentSandbox({
		id: 'kept',
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async () => {},
		execution: SHORT_CONFIRM,
		retire,
		keepOnUnconfirmedCancellation: { reason: 'workspace-kept' },
		...(options.fencedGuest
			? { fencedGuest: (_error, operation) => new FencedGuestTestError(operation) }
			: {}),
	})
	cleanups.unshift(() => sandbox.destroy())
	return { sandbox, retire }
}

/** A real unconfirmable cancellation on `sandbox` (fenced-agent.ts); the frozen command is thawed after. */
async function unconfirmedExec(sandbox: ReturnType<typeof createAgentSandbox>): Promise<unknown> {
	const { error, frozen } = await execUntilUnconfirmed(sandbox)
	if (frozen) cleanups.unshift(() => frozen.thaw())
	return error
}

describe.skipIf(!canFreeze)('an unconfirmable cancellation on a handle that keeps its unit', () => {
	it("R15-f6bfb7d-10/11/12/13: rejects with RemoteCancellationUnknownError carrying { accepted: false, reason: 'workspace-kept' } and no error, retires nothing, and the next call is admitted", async () => {
		const { sandbox, retire } = await keptSandbox()
		const error = await unconfirmedExec(sandbox)
		expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
		const unknown = error as RemoteCancellationUnknownError
		expect(unknown.retirement).toEqual({ accepted: false, reason: 'workspace-kept' })
		expect(unknown.retirement && 'error' in unknown.retirement).toBe(false)
		expect(retire).not.toHaveBeenCalled()
		expect(sandbox.retirement).toBeUndefined()
		expect(sandbox.status).toBe('ready')
		// Admitted: the guest (now fenced) answers; the handle itself refuses nothing.
		const next = await sandbox.readFile('missing.txt').then(
			() => undefined,
			(failure: unknown) => failure,
		)
		expect(next).not.toBeInstanceOf(SandboxRetiredError)
		expect(next).toBeInstanceOf(Error)
	})

	it("a self-fenced guest's refused reservation becomes the tier's error: not a RemoteCancellationUnknownError, and nothing retired", async () => {
		const { sandbox, retire } = await keptSandbox({ fencedGuest: true })
		await unconfirmedExec(sandbox)
		const error = await sandbox.exec('/bin/true').then(
			() => undefined,
			(failure: unknown) => failure,
		)
		expect(error).toBeInstanceOf(FencedGuestTestError)
		expect((error as FencedGuestTestError).operation).toBe('exec')
		expect((error as Error).cause).toBeUndefined()
		expect(retire).not.toHaveBeenCalled()
		expect(sandbox.status).toBe('ready')
	})
})

describe.skipIf(!canFreeze)(
	'an unconfirmable cancellation on a handle that retires its unit',
	() => {
		it("a self-fenced guest's refused reservation retires the unit when the tier names no fence (the Firecracker mapping)", async () => {
			const agent = await startAgent({ env: { ...FENCE_AGENT_ENV } })
			cleanups.push(() => agent.stop())
			const transport = new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' })
			const fencer = createAgentSandbox({
				id: 'fencer',
				transport,
				rootDir: agent.workspace,
				environment: 'linux-namespace',
				release: async () => {},
				execution: SHORT_CONFIRM,
			})
			await unconfirmedExec(fencer)
			const retire = vi.fn(
				async (): Promise<SandboxRetirementObservation> => ({ accepted: true, reason: 'deleted' }),
			)
			const sandbox = createAgentSandbox({
				id: 'retiring',
				transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
				rootDir: agent.workspace,
				environment: 'linux-namespace',
				release: async () => {},
				retire,
			})
			cleanups.unshift(() => sandbox.destroy())
			const error = await sandbox.exec('/bin/true').then(
				() => undefined,
				(failure: unknown) => failure,
			)
			expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
			expect((error as RemoteCancellationUnknownError).guestCode).toBe('agent_retiring')
			expect((error as RemoteCancellationUnknownError).retirement).toEqual({
				accepted: true,
				reason: 'deleted',
			})
			expect(retire).toHaveBeenCalledTimes(1)
			expect(sandbox.status).toBe('destroyed')
		})
	},
)
