// The workspace state machine: the decision table (start, done, join, queue, refuse), the state a
// flight records, admission, and the flight shell — one flight per verb, the first caller's signal,
// a joiner that leaves on its own signal without stopping the flight.
import { describe, expect, it } from 'vitest'
import {
	admits,
	decideTransition,
	stateAfter,
	TransitionRefusal,
	type TransitionRequest,
	type WorkspaceState,
	WorkspaceTransitions,
} from '../../../src/backends/kubernetes/workspace/workspace-transitions.js'

const suspend = (flush = true, quiesce = false): TransitionRequest => ({
	verb: 'suspend',
	explicit: true,
	flush,
	quiesce,
})
const destroySuspend = (flush = true, quiesce = false): TransitionRequest => ({
	verb: 'suspend',
	explicit: false,
	flush,
	quiesce,
})
const del: TransitionRequest = { verb: 'delete' }
const resume: TransitionRequest = { verb: 'resume' }

describe('decideTransition, no flight in progress', () => {
	it.each<[WorkspaceState, TransitionRequest, string]>([
		['running', suspend(), 'start'],
		['running', destroySuspend(), 'start'],
		['running', del, 'start'],
		['running', resume, 'done'],
		['detached', suspend(), 'start'],
		['detached', del, 'start'],
		['detached', resume, 'start'],
		['suspended', suspend(), 'done'],
		['suspended', destroySuspend(), 'done'],
		['suspended', del, 'start'],
		['suspended', resume, 'start'],
		['deleted', destroySuspend(), 'done'],
		['deleted', del, 'done'],
		['deleted', suspend(), 'refuse'],
		['deleted', resume, 'refuse'],
		// R15-7948fc0-08: a resume bringing its own epoch writes it on a running workspace.
		['running', { verb: 'resume', writesEpoch: true, epoch: 5 }, 'start'],
		['suspended', { verb: 'resume', writesEpoch: true, epoch: 5 }, 'start'],
	])('%s + %j → %s', (state, request, kind) => {
		expect(decideTransition(state, undefined, request).kind).toBe(kind)
	})
})

describe('decideTransition, a flight in progress', () => {
	it.each<[TransitionRequest, TransitionRequest, string]>([
		[{ ...suspend(), epoch: 3 }, { ...suspend(), epoch: 3 }, 'join'],
		[{ ...suspend(), epoch: 3 }, { ...suspend(), epoch: 4 }, 'queue'],
		[suspend(), { ...suspend(), epoch: 4 }, 'queue'],
		[{ ...resume, epoch: 1 }, resume, 'queue'],
	])(
		'R15-7948fc0-01: a request under another epoch than the flight %j + %j → %s',
		(flight, request, kind) => {
			expect(decideTransition('running', flight, request).kind).toBe(kind)
		},
	)

	it.each<[TransitionRequest, TransitionRequest, string, string?]>([
		[suspend(), suspend(), 'join'],
		[suspend(), destroySuspend(), 'join'],
		[destroySuspend(), suspend(), 'join'],
		[suspend(true, true), suspend(), 'join'],
		[suspend(true, true), suspend(true, true), 'join'],
		[suspend(false), destroySuspend(false), 'join'],
		[suspend(false), suspend(false), 'join'],
		[suspend(false), destroySuspend(true), 'refuse', 'flush-skipped'],
		[suspend(false), suspend(true), 'refuse', 'flush-skipped'],
		[suspend(true, false), suspend(true, true), 'refuse', 'quiesce-skipped'],
		[suspend(false, false), destroySuspend(true, true), 'refuse', 'quiesce-skipped'],
		[del, del, 'join'],
		[resume, resume, 'join'],
		[suspend(), del, 'queue'],
		[suspend(), resume, 'queue'],
		[del, destroySuspend(), 'queue'],
		[resume, suspend(), 'queue'],
	])('flight %j + %j → %s %s', (flight, request, kind, refusal) => {
		const decision = decideTransition('running', flight, request)
		expect(decision.kind).toBe(kind)
		if (refusal) expect(decision).toEqual({ kind: 'refuse', refusal })
	})
})

describe('stateAfter', () => {
	it.each<
		[
			WorkspaceState,
			TransitionRequest['verb'],
			'confirmed' | 'unconfirmed' | 'not-sent',
			WorkspaceState,
		]
	>([
		['running', 'suspend', 'confirmed', 'suspended'],
		['running', 'suspend', 'unconfirmed', 'detached'],
		['running', 'suspend', 'not-sent', 'running'],
		['detached', 'suspend', 'not-sent', 'detached'],
		['detached', 'suspend', 'confirmed', 'suspended'],
		['running', 'delete', 'confirmed', 'deleted'],
		['running', 'delete', 'unconfirmed', 'detached'],
		['suspended', 'delete', 'unconfirmed', 'suspended'],
		['suspended', 'resume', 'confirmed', 'running'],
		['suspended', 'resume', 'not-sent', 'suspended'],
		['detached', 'resume', 'not-sent', 'detached'],
	])('%s, %s %s → %s', (prior, verb, outcome, next) => {
		expect(stateAfter(prior, verb, outcome)).toBe(next)
	})

	it.each<[WorkspaceState, TransitionRequest | undefined, boolean]>([
		['running', undefined, true],
		['running', suspend(), false],
		['running', del, false],
		['detached', undefined, false],
		['suspended', undefined, false],
		['suspended', resume, false],
		['deleted', undefined, false],
	])('admits(%s, %j) is %s', (state, flight, admitted) => {
		expect(admits(state, flight)).toBe(admitted)
	})
})

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
	let resolve: () => void = () => {}
	let reject: (e: unknown) => void = () => {}
	const promise = new Promise<void>((res, rej) => {
		resolve = res
		reject = rej
	})
	return { promise, resolve, reject }
}

describe('WorkspaceTransitions', () => {
	it('runs one flight for concurrent suspends and a plain destroy, under the first caller signal', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		const signals: (AbortSignal | undefined)[] = []
		const first = new AbortController()
		const body = async (signal: AbortSignal | undefined) => {
			signals.push(signal)
			await gate.promise
			return { outcome: 'confirmed' as const }
		}
		const a = machine.run(suspend(), first.signal, body)
		const b = machine.run(suspend(), new AbortController().signal, body)
		const c = machine.run(destroySuspend(), undefined, body)
		expect(machine.admitting).toBe(false)
		gate.resolve()
		await Promise.all([a, b, c])
		expect(signals).toEqual([first.signal])
		expect(machine.state).toBe('suspended')
		// Satisfied now: nothing runs.
		await machine.run(suspend(), undefined, body)
		expect(signals).toHaveLength(1)
	})

	it('lets a joiner leave on its own signal while the flight runs on', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		const flight = machine.run(suspend(), undefined, async () => {
			await gate.promise
			return { outcome: 'confirmed' }
		})
		const leaving = new AbortController()
		const joiner = machine.run(suspend(), leaving.signal, async () => ({ outcome: 'confirmed' }))
		leaving.abort(new Error('caller left'))
		await expect(joiner).rejects.toThrow('caller left')
		gate.resolve()
		await flight
		expect(machine.state).toBe('suspended')
	})

	it('shares a failed flight with its joiners and records nothing, so a retry runs again', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		let runs = 0
		const failing = async () => {
			runs++
			await gate.promise
			return { outcome: 'not-sent' as const, error: new Error('patch refused') }
		}
		const a = machine.run(suspend(), undefined, failing)
		const b = machine.run(destroySuspend(), undefined, failing)
		gate.resolve()
		await expect(a).rejects.toThrow('patch refused')
		await expect(b).rejects.toThrow('patch refused')
		expect(machine.state).toBe('running')
		expect(machine.admitting).toBe(true)
		await expect(machine.run(suspend(), undefined, failing)).rejects.toThrow('patch refused')
		expect(runs).toBe(2)
	})

	it('queues a different verb behind the flight and decides it again afterwards', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		const order: string[] = []
		const suspending = machine.run(suspend(), undefined, async () => {
			await gate.promise
			order.push('suspend')
			return { outcome: 'confirmed' }
		})
		const resuming = machine.run(resume, undefined, async () => {
			order.push('resume')
			return { outcome: 'confirmed' }
		})
		gate.resolve()
		await Promise.all([suspending, resuming])
		expect(order).toEqual(['suspend', 'resume'])
		expect(machine.state).toBe('running')
	})

	it('makes a plain destroy queued behind a delete a no-op once the delete landed', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		let suspends = 0
		const deleting = machine.run(del, undefined, async () => {
			await gate.promise
			return { outcome: 'confirmed' }
		})
		const plain = machine.run(destroySuspend(), undefined, async () => {
			suspends++
			return { outcome: 'confirmed' }
		})
		gate.resolve()
		await Promise.all([deleting, plain])
		expect(suspends).toBe(0)
		expect(machine.state).toBe('deleted')
		await expect(
			machine.run(suspend(), undefined, async () => ({ outcome: 'confirmed' })),
		).rejects.toBeInstanceOf(TransitionRefusal)
	})

	it('refuses a joiner wanting a quiesce the flight skipped, and lets the flight finish', async () => {
		const machine = new WorkspaceTransitions('running')
		const gate = deferred()
		const flight = machine.run(suspend(true, false), undefined, async () => {
			await gate.promise
			return { outcome: 'confirmed' }
		})
		await expect(
			machine.run(suspend(true, true), undefined, async () => ({ outcome: 'confirmed' })),
		).rejects.toMatchObject({ refusal: 'quiesce-skipped' })
		gate.resolve()
		await flight
		expect(machine.state).toBe('suspended')
	})
})

describe('a suspension another process made', () => {
	it('R15-7bf9425-15: is recorded as detached (unconfirmed): suspended, refusing calls, and a suspend still runs', async () => {
		const transitions = new WorkspaceTransitions('running')
		expect(transitions.adoptSuspension()).toBe(true)
		expect(transitions.state).toBe('detached')
		expect(transitions.admitting).toBe(false)
		let ran = false
		await transitions.run(suspend(false), undefined, async () => {
			ran = true
			return { outcome: 'confirmed' }
		})
		expect(ran).toBe(true)
		expect(transitions.state).toBe('suspended')
		expect(transitions.adoptSuspension()).toBe(false)
	})
})
