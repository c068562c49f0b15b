/**
 * The one reader of `/proc/<pid>/stat` (proc(5)): `pid (comm) state ppid pgrp session tty_nr …`.
 * `comm` may hold spaces and parentheses, so the fields after it are counted from the LAST `)`.
 * Callers take the fields they need by name (`PROC_STAT_FIELD`) from one split.
 */
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'

/** proc(5)'s 1-based field numbers of the fields this package reads. */
export const PROC_STAT_FIELD = {
	state: 3,
	ppid: 4,
	pgrp: 5,
	session: 6,
	ttyNr: 7,
	/** Clock ticks since boot; with the pid it names one process across pid reuse. */
	startTime: 22,
} as const

export type ProcStatFieldName = keyof typeof PROC_STAT_FIELD

export interface ProcStatLine {
	/** The text before `(comm)`, trimmed (a decimal pid in real `/proc` text). */
	readonly pidText: string
	readonly comm: string
	/** Fields 3 onward: `after[0]` is field 3 (`state`). */
	readonly after: readonly string[]
}

/** Splits a stat line around its `comm`; undefined when the text has no `(…)` after a pid slot. */
export function splitProcStat(text: string): ProcStatLine | undefined {
	const open = text.indexOf('(')
	const close = text.lastIndexOf(')')
	if (open < 0 || close < open) return undefined
	const rest = text.slice(close + 1).trim()
	return {
		pidText: text.slice(0, open).trim(),
		comm: text.slice(open + 1, close),
		after: rest.length === 0 ? [] : rest.split(/\s+/),
	}
}

/** One named field of a stat line as text, or undefined when the line is cut short or malformed. */
export function procStatField(line: ProcStatLine, name: ProcStatFieldName): string | undefined {
	return line.after[PROC_STAT_FIELD[name] - 3]
}

/** One named numeric field, or undefined when absent or not a safe integer. */
export function procStatNumber(line: ProcStatLine, name: ProcStatFieldName): number | undefined {
	const text = procStatField(line, name)
	const value = Number(text)
	return text !== undefined && Number.isSafeInteger(value) ? value : undefined
}

/** A zombie (`Z`) or dead (`X`) process holds nothing: whoever inherited it reaps it. */
export function isDeadState(state: string | undefined): boolean {
	return state === 'Z' || state === 'X'
}

/** The text of `/proc/<pid>/stat`, or undefined when the process is gone (or unreadable). */
export function readProcStatText(pid: number): string | undefined {
	try {
		return readFileSync(`/proc/${pid}/stat`, 'utf8')
	} catch {
		return undefined
	}
}

/** `readProcStatText` without blocking the loop. */
export async function readProcStatTextAsync(pid: number): Promise<string | undefined> {
	try {
		return await readFile(`/proc/${pid}/stat`, 'utf8')
	} catch {
		return undefined
	}
}
