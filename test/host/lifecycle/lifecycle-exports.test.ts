/** The package root carries the quiesce, flush and stream-heartbeat surface of this release. */
import { describe, expect, it } from 'vitest'
import type {
	FlushReport,
	QuiescedProcess,
	QuiesceReport,
	QuiesceScope,
	StreamHeartbeat,
} from '../../../src/index.js'
import * as root from '../../../src/index.js'

describe('package root: quiesce, flush, stream heartbeat', () => {
	it.each([
		'QuiesceUnsupportedError',
		'QuiesceUnconfirmedError',
		'FlushUnsupportedError',
		'FlushUnconfirmedError',
		'AgentStreamSilentError',
		'quiesceThroughAgent',
		'flushThroughAgent',
	])('exports %s', (name) => {
		expect(typeof (root as Record<string, unknown>)[name]).toBe('function')
	})

	it('exports the feature names and heartbeat constants with their wire values', () => {
		expect(root.QUIESCE_FEATURE).toBe('quiesce')
		expect(root.FLUSH_FEATURE).toBe('flush')
		expect(root.STREAM_HEARTBEAT_FEATURE).toBe('stream-heartbeat')
		expect(root.DEFAULT_STREAM_HEARTBEAT_MS).toBe(15_000)
		expect(root.MIN_STREAM_HEARTBEAT_MS).toBe(100)
		expect(root.STREAM_HEARTBEAT_MISS_LIMIT).toBe(3)
		expect(root.STREAM_HEARTBEAT_MAX_ECHO_FACTOR).toBe(4)
		expect(root.AGENT_PROTOCOL_VERSION).toBe(2)
	})

	it('exports the StreamHeartbeat, QuiesceScope, QuiescedProcess and report types', () => {
		const beat: StreamHeartbeat = { type: 'heartbeat' }
		const scope: QuiesceScope = 'owned-sessions'
		const stopped: QuiescedProcess = { pid: 7, command: 'sleep 30', signal: 'SIGKILL' }
		const report: QuiesceReport = { scope, graceMs: 1, rounds: 2, stopped: [stopped] }
		const flushed: FlushReport = { durationMs: 1, workspace: '/workspace' }
		expect([beat.type, report.scope, flushed.workspace]).toEqual([
			'heartbeat',
			'owned-sessions',
			'/workspace',
		])
	})

	it('the contract Sandbox gains neither quiesce nor flush; only the agent-backed sandbox has them', () => {
		type ContractKeys = keyof root.Sandbox
		const onContract: Record<'quiesce' | 'flush', boolean> = {
			quiesce: false satisfies 'quiesce' extends ContractKeys ? true : false,
			flush: false satisfies 'flush' extends ContractKeys ? true : false,
		}
		expect(onContract).toEqual({ quiesce: false, flush: false })
		expect(typeof root.AgentSandbox.prototype.quiesce).toBe('function')
		expect(typeof root.AgentSandbox.prototype.flush).toBe('function')
	})

	it('a transport asks for no stream heartbeat unless told to', () => {
		const transport = new root.AgentTransport({ kind: 'unix', path: '/nonexistent' })
		expect(transport.options.streamHeartbeatMs).toBeUndefined()
		const zero = new root.AgentTransport({ kind: 'unix', path: '/x' }, { streamHeartbeatMs: 0 })
		expect(zero.options.streamHeartbeatMs).toBeUndefined()
		const asking = new root.AgentTransport({ kind: 'unix', path: '/x' }, { streamHeartbeatMs: 500 })
		expect(asking.options.streamHeartbeatMs).toBe(500)
	})
})
