/**
 * `start-detached {sessionId, command, args?, cwd?, env?}`: a program with no
 * PTY, stdin at EOF (`/dev/null`), as the leader of its own kernel session, with the scrubbed
 * environment every child gets and a jailed `cwd`. Its stdout and stderr are drained into the
 * session's ring for as long as it runs, attached or not. Answers `{ok: true, …summary, pid}` once
 * the spawn succeeded; `spawn_failed` (+ message) when it did not. When the program exits,
 * whatever is left in its kernel session is SIGKILLed after `NAMZU_AGENT_CANCEL_GRACE_MS`: a
 * session ends with its program.
 */

import { spawn } from 'node:child_process'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { SessionSignal } from '../../wire/sessions.js'
import { resolveWorkspaceDirectory } from '../files/jail.js'
import { childEnvironment } from '../process/child-env.js'
import { killSession } from '../process/process-tree.js'
import { isDirectory } from '../process/pty-process.js'
import type { OpHandler } from '../server/op-context.js'
import { OpRefusal } from '../server/op-refusal.js'
import type { SessionProgram } from '../sessions/session.js'
import { sessionRegistry } from '../sessions/session-registry.js'
import { parseStartDetached } from '../sessions/session-request.js'
import { signalKernelSession } from '../sessions/session-signal.js'
import { drainIntoSession, recordExitWhenDone } from './persistent-terminal.js'

class DetachedProgram implements SessionProgram {
	readonly pid: number | undefined

	constructor(pid: number | undefined) {
		this.pid = pid
	}

	/** stdin is closed: input is dropped. */
	input(): boolean {
		return true
	}

	onInputDrain(listener: () => void): void {
		listener()
	}

	resize(): void {}

	signal(signal: SessionSignal): number {
		// Spawned detached, so the program leads a kernel session whose id is its pid.
		return this.pid === undefined ? 0 : signalKernelSession(this.pid, signal)
	}

	teardown(): void {
		if (this.pid !== undefined) killSession(this.pid)
	}
}

export const startDetached: OpHandler = async (body, ctx) => {
	const spec = parseStartDetached(body)
	const cwd = resolveWorkspaceDirectory(ctx.config, spec.cwd)
	if (!isDirectory(cwd))
		throw new OpRefusal(
			formatRefusal(AGENT_REFUSAL.invalid_cwd, `not a directory: ${spec.cwd ?? cwd}`),
		)
	const registry = sessionRegistry(ctx.config.sessions)
	const session = registry.create(spec.sessionId, 'detached', spec.command, spec.args)
	const child = spawn(spec.command, [...spec.args], {
		cwd,
		env: childEnvironment(spec.env),
		// setsid(): its own kernel session (and process group), outside the agent's.
		detached: true,
		stdio: ['ignore', 'pipe', 'pipe'],
	})
	const started = await new Promise<Error | undefined>((resolve) => {
		child.once('spawn', () => resolve(undefined))
		child.once('error', resolve)
	})
	if (started) {
		registry.remove(session)
		throw new OpRefusal(
			AGENT_REFUSAL.spawn_failed,
			formatRefusal(AGENT_REFUSAL.spawn_failed, started.message),
		)
	}
	const program = new DetachedProgram(child.pid)
	session.start(program)
	drainIntoSession(session, [
		['stdout', child.stdout],
		['stderr', child.stderr],
	])
	recordExitWhenDone(child, session, ctx.config.cancelGraceMs, () => program.teardown())
	ctx.reply({ ok: true, ...session.summary(), pid: child.pid })
}
