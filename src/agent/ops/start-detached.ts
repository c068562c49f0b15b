/**
 * `start-detached {sessionId, command, args?, cwd?, env?}`: a program with no
 * PTY, stdin at EOF (`/dev/null`), as the leader of its own kernel session, with the scrubbed
 * environment every child gets and a jailed `cwd`. Its stdout and stderr are drained into the
 * session's ring for as long as it runs, attached or not. Answers `{ok: true, …summary, pid}` once
 * the spawn succeeded; `spawn_failed` (+ message) when it did not. When the program exits,
 * whatever is left in its kernel session is SIGKILLed after `NAMZU_AGENT_CANCEL_GRACE_MS`: a
 * session ends with its program. With workload cgroups the program and everything it starts are in
 * a cgroup of their own, joined before it runs (refused `workload_cgroup_unavailable` /
 * `workload_cgroup_join_failed` otherwise), and a SIGKILL ends that whole cgroup — `setsid` and
 * double-forked descendants included.
 */

import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { SessionSignal } from '../../wire/sessions.js'
import { resolveWorkspaceDirectory } from '../files/jail.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { childEnvironment } from '../process/child-env.js'
import { isDirectory } from '../process/pty-process.js'
import { SessionTeardown } from '../process/session-teardown.js'
import {
	spawnWorkload,
	WORKLOAD_CGROUP_JOIN_FAILED,
	type WorkloadChild,
} from '../process/workload-spawn.js'
import type { SessionProgram } from '../sessions/session.js'
import { sessionRegistry } from '../sessions/session-registry.js'
import { parseStartDetached } from '../sessions/session-request.js'
import { signalKernelSession } from '../sessions/session-signal.js'
import { drainIntoSession, recordExitWhenDone } from './persistent-terminal.js'

class DetachedProgram implements SessionProgram {
	readonly pid: number | undefined
	readonly #teardown: SessionTeardown

	constructor(pid: number | undefined, teardown: SessionTeardown) {
		this.pid = pid
		this.#teardown = teardown
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
		if (signal === 'SIGKILL') return this.#teardown.run()
		// Spawned detached, so the program leads a kernel session whose id is its pid.
		return this.pid === undefined
			? 0
			: signalKernelSession(this.pid, signal, this.#teardown.treeMembers())
	}

	teardown(): void {
		this.#teardown.run()
	}

	get tornDown(): Promise<void> {
		return this.#teardown.finished
	}
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error)
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
	let spawned: WorkloadChild
	try {
		spawned = spawnWorkload(ctx.workloadCgroups, {
			command: spec.command,
			args: spec.args,
			cwd,
			env: childEnvironment(spec.env),
			// setsid(): its own kernel session (and process group), outside the agent's.
			stdin: 'ignore',
		})
	} catch (error) {
		registry.remove(session)
		if (error instanceof OpRefusal) throw error
		throw new OpRefusal(
			AGENT_REFUSAL.spawn_failed,
			formatRefusal(AGENT_REFUSAL.spawn_failed, describe(error)),
		)
	}
	const { child, tree, joinFailure } = spawned
	const started = await new Promise<Error | undefined>((resolve) => {
		child.once('spawn', () => resolve(undefined))
		child.once('error', resolve)
	})
	if (started) {
		registry.remove(session)
		tree.release()
		throw new OpRefusal(
			AGENT_REFUSAL.spawn_failed,
			formatRefusal(AGENT_REFUSAL.spawn_failed, started.message),
		)
	}
	const teardown = new SessionTeardown(child, tree, ctx.config.cancelConfirmTimeoutMs)
	teardown.session = child.pid
	const program = new DetachedProgram(child.pid, teardown)
	const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
	// Listening from the first byte, and for the exit, before the join is known.
	drainIntoSession(session, [
		['stdout', child.stdout],
		['stderr', child.stderr],
	])
	recordExitWhenDone(child, session, ctx.config.cancelGraceMs, () => program.teardown())
	const failedJoin = await joinFailure
	if (failedJoin !== undefined) {
		// The program never ran; its join shell is exiting.
		await closed
		registry.remove(session)
		tree.release()
		throw new OpRefusal(
			WORKLOAD_CGROUP_JOIN_FAILED,
			formatRefusal(WORKLOAD_CGROUP_JOIN_FAILED, failedJoin),
		)
	}
	session.start(program)
	ctx.reply({ ok: true, ...session.summary(), pid: child.pid })
}
