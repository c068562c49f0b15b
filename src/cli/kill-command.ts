/**
 * `namzu-sandbox kill HANDLE`: ends one detached command and nothing else — its kept-alive
 * sandbox and every other command in it keep running. Without `--signal` an execution is
 * cancelled (its whole process group: SIGTERM, then SIGKILL after the guest's grace window); with
 * it, exactly that signal goes to the process group, as `docker kill --signal` (the command may
 * handle it and run on). A session gets the signal named (default SIGKILL, as `killSession`).
 * The parser has already held each signal to what its handle's kind takes (`KillVerb`).
 */
import type { LocalSandbox } from '../backends/local/index.js'
import { formatCliHandle } from './cli-handle.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'
import type { ExecutionKillVerb, KillVerb, SessionKillVerb } from './parse-verbs.js'

function isSessionKill(verb: KillVerb): verb is SessionKillVerb {
	return verb.handle.kind === 'session'
}

async function killSession(
	sandbox: LocalSandbox,
	verb: SessionKillVerb,
	abortSignal: AbortSignal,
): Promise<number> {
	const killed = await sandbox.killSession(verb.handle.sessionId, {
		...(verb.signal === undefined ? {} : { signal: verb.signal }),
		abortSignal,
	})
	const outcome =
		killed.signalled > 0 ? `sent ${verb.signal ?? 'SIGKILL'}` : `already ${killed.state}`
	process.stderr.write(`namzu-sandbox: ${formatCliHandle(verb.handle)}: ${outcome}\n`)
	return 0
}

async function killExecution(
	sandbox: LocalSandbox,
	verb: ExecutionKillVerb,
	abortSignal: AbortSignal,
): Promise<number> {
	const shown = formatCliHandle(verb.handle)
	const { executionId } = verb.handle
	if (verb.signal !== undefined) {
		const attached = await sandbox.attachProcess(executionId, { signal: abortSignal })
		try {
			await attached.kill(verb.signal, { signal: abortSignal })
		} finally {
			attached.detach()
		}
		process.stderr.write(
			`namzu-sandbox: ${shown}: sent ${verb.signal}; the sandbox keeps running\n`,
		)
		return 0
	}
	const reply = await sandbox.cancelExecution(executionId, { signal: abortSignal })
	const ended = reply.started ? `ended (${reply.state})` : 'cancelled before it started'
	process.stderr.write(`namzu-sandbox: ${shown}: ${ended}; the sandbox keeps running\n`)
	return 0
}

export function killCommand(verb: KillVerb): Promise<number> {
	return withInterrupt(async (abortSignal) => {
		const sandbox = await openKeptAlive(verb.handle.sandboxId, abortSignal)
		return isSessionKill(verb)
			? killSession(sandbox, verb, abortSignal)
			: killExecution(sandbox, verb, abortSignal)
	})
}
