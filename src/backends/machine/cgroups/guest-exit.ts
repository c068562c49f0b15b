/**
 * How a local sandbox's agent ended, from what the host can see (pure): the launched process's
 * exit (bwrap, or the plain agent without bubblewrap) and the sandbox memory group's OOM-kill
 * counter read at start and after the exit. bwrap reports a child killed by signal N as exit code
 * 128 + N, so under bubblewrap that code is read as the signal (an agent that itself exits with
 * such a code reads the same). The counter is `oom_kill N` in v1 `memory.oom_control` and v2
 * `memory.events`; it counts kills in the agent's own group, so a rise with the agent dead of
 * SIGKILL is the OOM killer's doing.
 */
import { constants } from 'node:os'
import type { GuestExit } from '../../../host/transport/transport-errors.js'
import type { ChildExit } from '../launch/agent-launcher.js'

/** `oom_kill N` of v1 `memory.oom_control` / v2 `memory.events`; undefined when absent. */
export function parseOomKillCount(text: string): number | undefined {
	const match = /^oom_kill (\d+)$/m.exec(text)
	if (match?.[1] === undefined) return undefined
	const count = Number(match[1])
	return Number.isSafeInteger(count) ? count : undefined
}

function signalNamed(number: number): NodeJS.Signals | undefined {
	for (const [name, value] of Object.entries(constants.signals)) {
		if (value === number) return name as NodeJS.Signals
	}
	return undefined
}

export interface GuestExitFacts {
	readonly sandboxId: string
	readonly exit: ChildExit
	/** Whether the launched process is bwrap (which turns a child's fatal signal into 128 + N). */
	readonly confined: boolean
	/** The OOM-kill counter before the agent started and after it ended; undefined when unreadable. */
	readonly oomKillsAtStart: number | undefined
	readonly oomKillsAtExit: number | undefined
}

export function guestExitOf(facts: GuestExitFacts): GuestExit {
	const { exit, confined } = facts
	const code = exit.code
	const fromCode =
		confined && code !== null && code > 128 && code < 128 + 65 ? signalNamed(code - 128) : undefined
	const signal = exit.signal ?? fromCode ?? null
	const exitCode = signal === null ? code : null
	const counted =
		facts.oomKillsAtStart !== undefined && facts.oomKillsAtExit !== undefined
			? facts.oomKillsAtExit > facts.oomKillsAtStart
			: undefined
	return {
		sandboxId: facts.sandboxId,
		exitCode,
		signal,
		...(counted === undefined ? {} : { oomKilled: counted && signal === 'SIGKILL' }),
	}
}
