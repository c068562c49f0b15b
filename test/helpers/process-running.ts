/**
 * Whether a process still runs, for tests that assert a kill landed. A zombie (or dead) process
 * counts as ended: `kill(pid, 0)` still succeeds on one until its parent reaps it, and a killed
 * grandchild of the agent is reparented to this machine's init, which may reap it late — that is
 * the init's pace, not the sandbox's, so asserting on it flakes under load.
 */
import {
	isDeadState,
	procStatField,
	readProcStatText,
	splitProcStat,
} from '../../src/common/proc-stat.js'

export function isRunning(pid: number): boolean {
	const text = readProcStatText(pid)
	if (text === undefined) return false
	const line = splitProcStat(text)
	return line !== undefined && !isDeadState(procStatField(line, 'state'))
}
