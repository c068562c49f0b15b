/**
 * The detached commands the CLI started in a kept-alive sandbox (`run --detach`, `exec -d`), so
 * `sessions` can list them: one JSON line each in the sandbox's own state directory on the host
 * (never visible inside it), which `destroy` and `gc` remove with the sandbox. The guest has no
 * list of executions; their state is asked one id at a time.
 */
import { appendFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { LocalSandbox } from '../backends/local/index.js'
import { listLocalSandboxes } from '../backends/machine/index.js'
import { AgentSandbox } from '../host/index.js'
import { cliStateDir } from './kept-alive-context.js'

export const EXECUTION_JOURNAL_FILE = 'cli-executions.jsonl'

export interface JournaledExecution {
	readonly executionId: string
	readonly command: string
	readonly args: readonly string[]
	readonly startedAtMs: number
}

async function stateRootOf(sandboxId: string): Promise<string | undefined> {
	const stateDir = cliStateDir()
	const listings = await listLocalSandboxes(stateDir === undefined ? {} : { stateDir })
	return listings.find((listing) => listing.id === sandboxId)?.descriptor.stateRoot
}

export async function recordExecution(
	sandbox: LocalSandbox,
	entry: Omit<JournaledExecution, 'startedAtMs'>,
): Promise<void> {
	const root = await stateRootOf(sandbox.id)
	if (root === undefined) return
	const line = JSON.stringify({ ...entry, startedAtMs: Date.now() })
	await appendFile(join(root, EXECUTION_JOURNAL_FILE), `${line}\n`, { mode: 0o600 })
}

function isEntry(value: unknown): value is JournaledExecution {
	if (typeof value !== 'object' || value === null) return false
	const entry = value as Record<string, unknown>
	return (
		typeof entry.executionId === 'string' &&
		typeof entry.command === 'string' &&
		Array.isArray(entry.args) &&
		typeof entry.startedAtMs === 'number'
	)
}

/** The journaled executions of `stateRoot`, oldest first; a torn or foreign line is skipped. */
export async function journaledExecutions(stateRoot: string): Promise<JournaledExecution[]> {
	let text: string
	try {
		text = await readFile(join(stateRoot, EXECUTION_JOURNAL_FILE), 'utf8')
	} catch {
		return []
	}
	const entries: JournaledExecution[] = []
	for (const line of text.split('\n')) {
		try {
			const parsed: unknown = JSON.parse(line)
			if (isEntry(parsed)) entries.push(parsed)
		} catch {
			// A line torn by a crash mid-append: the rest still count.
		}
	}
	return entries
}

/**
 * Where execution `executionId` is: `running`, `completed`, `failed`, `cancelled`, or `gone` once
 * the guest no longer holds it (its retention window passed).
 */
export async function executionState(
	sandbox: LocalSandbox,
	executionId: string,
	signal: AbortSignal,
): Promise<string> {
	if (!(sandbox instanceof AgentSandbox)) return 'unknown'
	const reply = await sandbox.transport.reserveExecution(signal, executionId)
	// A reply of `reserved` for an id that once ran means the guest had forgotten it.
	return typeof reply.state === 'string' && reply.state !== 'reserved' ? reply.state : 'gone'
}
