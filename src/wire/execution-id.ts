/**
 * Execution ids: `exec_` followed by a canonical (lower-case) UUID of version 1–5. The agent mints
 * v4 ids; a caller may name its own when reserving, and a host whose guest reserves on `execute`
 * (`EXECUTE_RESERVES_FEATURE`) mints the id it sends.
 */
import { randomUUID } from 'node:crypto'

const EXECUTION_ID_PATTERN =
	/^exec_[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

export function isExecutionId(value: unknown): value is string {
	return typeof value === 'string' && EXECUTION_ID_PATTERN.test(value)
}

/** `uuid` is the minting end's v4 source (the agent's reseedable one; Node's on the host). */
export function mintExecutionId(uuid: () => string = randomUUID): string {
	return `exec_${uuid()}`
}
