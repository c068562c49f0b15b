// The diagnosis after a kept unconfirmed cancellation, against REAL agents over token TCP: the
// command's reservation is a real one (the transport remembers which guest accepted it), the
// agent state is one real `healthz`, and a restarted agent is a second agent process answering on
// the same pod's token. The verdict tables are pure.
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
	agentStateOf,
	currentGuest,
	diagnoseUnconfirmedCancellation,
	judgeGuest,
	type KubernetesWorkspaceCancellationNotice,
} from '../../../../src/backends/kubernetes/workspace/cancellation-diagnosis.js'
import type { KubernetesGuestRef } from '../../../../src/backends/kubernetes/workspace/guest-identity.js'
import { KubernetesWorkspaceGuestGoneError } from '../../../../src/backends/kubernetes/workspace/workspace-guest-errors.js'
import { RemoteCancellationUnknownError } from '../../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../../src/host/transport/agent-transport.js'
import { FENCE_AGENT_ENV, fenceGuest } from '../../../helpers/fenced-agent.js'
import { canFreeze } from '../../../helpers/frozen-process.js'
import { type LaunchedGuest, launchGuestAgent, SETPRIV_CHAIN } from '../launched-guest.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined)
})

async function agent(token: string, env: Readonly<Record<string, string>> = {}) {
	const guest = await launchGuestAgent({ token, launcher: SETPRIV_CHAIN, env })
	cleanups.push(() => guest.stop())
	return guest
}

function transportTo(guest: LaunchedGuest, token: string): AgentTransport {
	return new AgentTransport({ kind: 'tcp', host: '127.0.0.1', port: guest.port, token })
}

/** A real reservation through `transport`, and the unconfirmed-cancellation error a command on it met. */
async function reservedCommand(transport: AgentTransport): Promise<RemoteCancellationUnknownError> {
	const reply = await transport.reserveExecution(AbortSignal.timeout(5_000))
	const executionId = String(reply.executionId)
	const error = new RemoteCancellationUnknownError(executionId, 'no cancellation was acknowledged')
	error.retirement = { accepted: false, reason: 'workspace-kept' }
	return error
}

async function diagnose(
	transport: AgentTransport,
	error: RemoteCancellationUnknownError,
	podUid: string | undefined,
) {
	const notices: KubernetesWorkspaceCancellationNotice[] = []
	const final = await diagnoseUnconfirmedCancellation(error, {
		transport,
		readCurrentPodUid: async () => podUid,
		onNotice: (notice) => notices.push(notice),
	})
	expect(notices).toHaveLength(1)
	return { final, notice: notices[0] as KubernetesWorkspaceCancellationNotice }
}

describe('the diagnosis verdicts', () => {
	it.each([
		[{ reply: { ok: true, protocolVersion: 2 } }, 'ok'],
		[{ reply: { ok: false, protocolVersion: 2, retiring: true } }, 'retiring'],
		[{ reply: { ok: false, protocolVersion: 2 } }, 'unreachable'],
		[{ failure: new Error('ECONNREFUSED') }, 'unreachable'],
	] as const)('R15-f6bfb7d-15: agentStateOf(%j) is %s', (outcome, state) => {
		expect(agentStateOf(outcome)).toBe(state)
	})

	const a1 = { podUid: 'a', guestBootId: '1' }
	it.each([
		['the same pod and boot id', a1, a1, 'same', undefined],
		['another pod', a1, { podUid: 'b' }, 'gone', 'pod-replaced'],
		[
			'another boot id in the pod',
			a1,
			{ podUid: 'a', guestBootId: '2' },
			'gone',
			'container-restarted',
		],
		['no boot id on one side', a1, { podUid: 'a' }, 'unknown', undefined],
		['the reserving guest unknown', undefined, a1, 'unknown', undefined],
		['the current pod unreadable', a1, undefined, 'unknown', undefined],
	] as Array<
		[
			string,
			KubernetesGuestRef | undefined,
			KubernetesGuestRef | undefined,
			string,
			string | undefined,
		]
	>)('judgeGuest: %s', (_title, previous, current, guest, change) => {
		const verdict = judgeGuest(previous, current)
		expect(verdict.guest).toBe(guest)
		expect(verdict.change).toBe(change)
	})

	it('R15-1d46ef4-17: current carries a boot id only when the transport last spoke to that pod', () => {
		const transport = {
			handle: { kind: 'tcp' as const, host: 'h', port: 1, token: 'pod-a' },
			guestBootId: 'boot-1',
		}
		expect(currentGuest('pod-a', transport)).toEqual({ podUid: 'pod-a', guestBootId: 'boot-1' })
		expect(currentGuest('pod-b', transport)).toEqual({ podUid: 'pod-b' })
		expect(currentGuest(undefined, transport)).toBeUndefined()
	})
})

describe('diagnoseUnconfirmedCancellation against real agents', () => {
	it("R15-f6bfb7d-14/15: a guest still serving the command's pod is 'ok', the guest 'same', the error unchanged", async () => {
		const token = randomUUID()
		const transport = transportTo(await agent(token), token)
		const error = await reservedCommand(transport)
		const { final, notice } = await diagnose(transport, error, token)
		expect(final).toBe(error)
		expect(notice).toMatchObject({ error, agent: 'ok', guest: 'same' })
		expect(notice.previous).toEqual(notice.current)
		expect(notice.previous?.podUid).toBe(token)
		expect(notice.previous?.guestBootId).toEqual(expect.any(String))
	})

	it.skipIf(!canFreeze)("R15-f6bfb7d-15: a guest that fenced itself is 'retiring'", async () => {
		const token = randomUUID()
		const guest = await agent(token, FENCE_AGENT_ENV)
		const transport = transportTo(guest, token)
		const error = await reservedCommand(transport)
		const fence = await fenceGuest(
			{ kind: 'tcp', host: '127.0.0.1', port: guest.port, token },
			guest.workspace,
		)
		cleanups.unshift(() => fence.frozen.thaw())
		const { notice } = await diagnose(transport, error, token)
		expect(notice.agent).toBe('retiring')
	})

	it("R15-f6bfb7d-15: an agent that does not answer is 'unreachable'", async () => {
		const token = randomUUID()
		const guest = await agent(token)
		const transport = new AgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port: guest.port, token },
			{ connectRetryBudgetMs: 200 },
		)
		const error = await reservedCommand(transport)
		await guest.stop()
		const { final, notice } = await diagnose(transport, error, token)
		expect(notice.agent).toBe('unreachable')
		expect(final).toBe(error)
	})

	it('R15-1d46ef4-12/13/16: the pod the command reserved on was replaced → KubernetesWorkspaceGuestGoneError, still a RemoteCancellationUnknownError with its retirement', async () => {
		const token = randomUUID()
		const transport = transportTo(await agent(token), token)
		const error = await reservedCommand(transport)
		const { final, notice } = await diagnose(transport, error, 'pod-replacement')
		expect(final).toBeInstanceOf(KubernetesWorkspaceGuestGoneError)
		expect(final).toBeInstanceOf(RemoteCancellationUnknownError)
		const gone = final as KubernetesWorkspaceGuestGoneError
		expect(gone.change).toBe('pod-replaced')
		expect(gone.retirement).toEqual({ accepted: false, reason: 'workspace-kept' })
		expect(gone.executionId).toBe(error.executionId)
		expect(gone.retryable).toBe(false)
		expect(gone.cause).toBe(error)
		expect(notice).toMatchObject({ error: gone, guest: 'gone' })
		expect(notice.previous?.podUid).toBe(token)
		// R15-1d46ef4-17: the replacement's agent never answered this transport: no boot id for it.
		expect(notice.current).toEqual({ podUid: 'pod-replacement' })
	})

	it('R15-1d46ef4-09/12: the agent process in the same pod restarted → container-restarted, judged against the reservation, not the latest reply', async () => {
		const token = randomUUID()
		const first = await agent(token)
		const transport = transportTo(first, token)
		const error = await reservedCommand(transport)
		await first.stop()
		// The container restarts: a new agent process under the same pod uid (the same token).
		const second = await agent(token)
		transport.rebind({ kind: 'tcp', host: '127.0.0.1', port: second.port, token })
		await transport.cancelExecution(String(error.executionId), AbortSignal.timeout(5_000))
		expect(transport.guestBootId).toEqual(expect.any(String))
		const { final, notice } = await diagnose(transport, error, token)
		expect(final).toBeInstanceOf(KubernetesWorkspaceGuestGoneError)
		expect((final as KubernetesWorkspaceGuestGoneError).change).toBe('container-restarted')
		expect(notice.previous?.guestBootId).not.toBe(notice.current?.guestBootId)
		expect(notice.current).toEqual({ podUid: token, guestBootId: transport.guestBootId })
	})

	it('R15-1d46ef4-16: a later reservation on another guest is not attributed to the command', async () => {
		const token = randomUUID()
		const first = await agent(token)
		const transport = transportTo(first, token)
		const error = await reservedCommand(transport)
		const other = randomUUID()
		const second = await agent(other)
		transport.rebind({ kind: 'tcp', host: '127.0.0.1', port: second.port, token: other })
		await reservedCommand(transport)
		// The cluster says the command's pod is still the one serving: the command's guest is the same.
		transport.rebind({ kind: 'tcp', host: '127.0.0.1', port: first.port, token })
		await reservedCommand(transport)
		const { notice } = await diagnose(transport, error, token)
		expect(notice.previous?.podUid).toBe(token)
		expect(notice.guest).toBe('same')
	})

	it('a throwing onCancellationUnconfirmed does not replace the error', async () => {
		const token = randomUUID()
		const transport = transportTo(await agent(token), token)
		const error = await reservedCommand(transport)
		const onNotice = vi.fn(() => {
			throw new Error('hook failure')
		})
		const final = await diagnoseUnconfirmedCancellation(error, {
			transport,
			readCurrentPodUid: async () => token,
			onNotice,
		})
		expect(final).toBe(error)
		expect(onNotice).toHaveBeenCalledTimes(1)
	})
})
