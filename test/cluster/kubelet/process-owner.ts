/**
 * Who owns a kubelet's host resources (a network slot, a loop device): the owning process's pid
 * and its `/proc/<pid>/stat` start time, so a recycled pid is never taken for the owner. A record
 * whose owner is no longer alive is a crashed run's, and its resources may be reclaimed.
 */
import { readFile } from 'node:fs/promises'
import { isRecord } from '../paths.js'

export interface ProcessOwner {
	readonly pid: number
	readonly startTicks: string
}

export async function startTicksOf(pid: number): Promise<string | undefined> {
	try {
		const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
		return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
	} catch {
		return undefined
	}
}

/** This process as an owner record. */
export async function currentOwner(): Promise<ProcessOwner> {
	return { pid: process.pid, startTicks: (await startTicksOf(process.pid)) ?? '' }
}

export function isProcessOwner(value: unknown): value is ProcessOwner {
	return isRecord(value) && typeof value.pid === 'number' && typeof value.startTicks === 'string'
}

export async function ownerAlive(owner: ProcessOwner): Promise<boolean> {
	return (await startTicksOf(owner.pid)) === owner.startTicks
}

/** True while the owner recorded in the JSON file `file` is alive (false for any unreadable file). */
export async function ownerFileAlive(file: string): Promise<boolean> {
	try {
		const owner: unknown = JSON.parse(await readFile(file, 'utf8'))
		return isProcessOwner(owner) && (await ownerAlive(owner))
	} catch {
		return false
	}
}
