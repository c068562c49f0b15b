import { agentRandom } from './agent-random.js'

/**
 * Minted once per agent process, and again by `restored`: a host that sees it change knows it is
 * talking to a different guest (a restarted pod, a fork restored from a memory image), where
 * everything it started before is gone or belongs to another. Carried on authenticated replies
 * (reserve, cancel, read-file, write-file, terminal and tcp `ready`), never on `healthz`.
 */
let current: string = agentRandom.uuid()

export function guestBootId(): string {
	return current
}

/** A new identity, after the agent's random source took the restore's seed. */
export function renewGuestBootId(): string {
	current = agentRandom.uuid()
	return current
}
