import { describe, expect, it } from 'vitest'
import { createAgentGates, gateRefusal } from '../../../src/agent/lifecycle/agent-gates.js'

describe('gateRefusal', () => {
	const open = createAgentGates()
	const retiring = { retiring: true, quiescing: false }
	const quiescing = { retiring: false, quiescing: true }
	it.each([
		[open, 'execute', undefined],
		[retiring, 'healthz', undefined],
		[retiring, 'cancel-execution', undefined],
		[retiring, 'execute', 'agent_retiring'],
		[retiring, 'read-file', 'agent_retiring'],
		[quiescing, 'reserve-execution', 'quiesce_in_progress'],
		[quiescing, 'execute', 'quiesce_in_progress'],
		[quiescing, 'terminal', 'quiesce_in_progress'],
		[quiescing, 'flush', 'quiesce_in_progress'],
		[quiescing, 'read-file', undefined],
		[quiescing, 'cancel-execution', undefined],
		[{ retiring: true, quiescing: true }, 'read-file', 'agent_retiring'],
	])('%j refuses %s with %s', (gates, op, expected) => {
		expect(gateRefusal(gates, op)).toBe(expected)
	})
})
