/**
 * `namzu-sandbox sessions [SANDBOX]`: the kept-alive sandboxes of the state directory (state,
 * time left, workspace) and, for running ones, the sessions their agents hold and the detached
 * commands the CLI started in them (`execution-journal.ts`). Formatting is pure.
 */
import { LocalSandboxNotFoundError } from '../backends/local/index.js'
import { type LocalSandboxListing, listLocalSandboxes } from '../backends/machine/index.js'
import type { SessionSummary } from '../contract-entry.js'
import { formatCliHandle } from './cli-handle.js'
import {
	executionState,
	type JournaledExecution,
	journaledExecutions,
} from './execution-journal.js'
import { cliStateDir, openKeptAlive } from './kept-alive-context.js'

function minutesLeft(expiresAtMs: number, nowMs: number): string {
	const left = Math.max(0, expiresAtMs - nowMs)
	return left >= 60_000 ? `${Math.floor(left / 60_000)}m left` : `${Math.ceil(left / 1000)}s left`
}

export function formatSandboxLine(listing: LocalSandboxListing, nowMs: number): string {
	const { descriptor } = listing
	const left = listing.state === 'running' ? minutesLeft(descriptor.expiresAtMs, nowMs) : '-'
	return `${listing.id}  ${listing.state.padEnd(7)}  ${left.padEnd(9)}  ${descriptor.workspace}`
}

export function formatSessionLine(sandboxId: string, session: SessionSummary): string {
	const handle = formatCliHandle({ kind: 'session', sandboxId, sessionId: session.sessionId })
	const status =
		session.state === 'running'
			? `running${session.attached ? ', attached' : ''}`
			: `exited ${session.signal ?? session.exitCode ?? ''}`.trim()
	const command = [session.command, ...session.args].join(' ')
	return `  ${handle}  ${session.kind}  ${status}  ${session.nextOffset} bytes  ${command}`
}

export function formatExecutionLine(
	sandboxId: string,
	entry: JournaledExecution,
	state: string,
): string {
	const handle = formatCliHandle({ kind: 'execution', sandboxId, executionId: entry.executionId })
	return `  ${handle}  detached  ${state}  ${[entry.command, ...entry.args].join(' ')}`
}

export async function sessionsCommand(sandboxId?: string): Promise<number> {
	const stateDir = cliStateDir()
	const listings = (await listLocalSandboxes(stateDir === undefined ? {} : { stateDir })).filter(
		(listing) => sandboxId === undefined || listing.id === sandboxId,
	)
	if (sandboxId !== undefined && listings.length === 0) {
		throw new LocalSandboxNotFoundError(sandboxId, 'missing')
	}
	if (listings.length === 0) process.stderr.write('namzu-sandbox: no kept-alive sandboxes\n')
	const now = Date.now()
	for (const listing of listings) {
		process.stdout.write(`${formatSandboxLine(listing, now)}\n`)
		if (listing.state !== 'running') continue
		try {
			const sandbox = await openKeptAlive(listing.id)
			for (const session of await sandbox.listSessions()) {
				process.stdout.write(`${formatSessionLine(listing.id, session)}\n`)
			}
			for (const entry of await journaledExecutions(listing.descriptor.stateRoot)) {
				const state = await executionState(sandbox, entry.executionId, AbortSignal.timeout(10_000))
				process.stdout.write(`${formatExecutionLine(listing.id, entry, state)}\n`)
			}
		} catch (error) {
			const message = error instanceof Error ? error.message : String(error)
			process.stdout.write(`  (sessions unavailable: ${message})\n`)
		}
	}
	return 0
}
