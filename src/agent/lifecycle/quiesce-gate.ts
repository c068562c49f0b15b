/**
 * Holding `gates.quiescing` up. A quiesce op holds it for its duration; the SIGTERM drain raises it
 * for good. Counted, so an op finishing inside the drain cannot lower the gate the drain raised.
 */
import type { AgentGates } from './agent-gates.js'

interface Holds {
	count: number
	permanent: boolean
}

const holdsByGates = new WeakMap<AgentGates, Holds>()

function holdsOf(gates: AgentGates): Holds {
	let holds = holdsByGates.get(gates)
	if (!holds) {
		holds = { count: 0, permanent: false }
		holdsByGates.set(gates, holds)
	}
	return holds
}

/** Raises the gate until the returned function is called (idempotent). */
export function holdQuiesceGate(gates: AgentGates): () => void {
	const holds = holdsOf(gates)
	holds.count++
	gates.quiescing = true
	let released = false
	return () => {
		if (released) return
		released = true
		holds.count--
		if (holds.count <= 0 && !holds.permanent) gates.quiescing = false
	}
}

/** Raises the gate for the rest of the process's life (the SIGTERM drain). */
export function raiseQuiesceGateForever(gates: AgentGates): void {
	holdsOf(gates).permanent = true
	gates.quiescing = true
}
