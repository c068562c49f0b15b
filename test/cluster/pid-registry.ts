// Records the pid of every control-plane process the harness starts in `<stateDir>/pids.json`, so
// the next `cluster:up` (or `cluster:down`) can end what a crashed run left behind. A recorded pid
// is only signalled while /proc/<pid>/cmdline still names the binary we started: a recycled pid
// belonging to someone else is never touched.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isRecord } from './paths.js'

export interface RecordedProcess {
	readonly pid: number
	/** The executable path the process was started with (argv[0]). */
	readonly executable: string
	readonly name: string
}

function registryFile(stateDir: string): string {
	return join(stateDir, 'pids.json')
}

export function readRegistry(stateDir: string): RecordedProcess[] {
	const file = registryFile(stateDir)
	if (!existsSync(file)) return []
	try {
		const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'))
		if (!Array.isArray(parsed)) return []
		return parsed.filter(
			(entry): entry is RecordedProcess =>
				isRecord(entry) &&
				typeof entry.pid === 'number' &&
				typeof entry.executable === 'string' &&
				typeof entry.name === 'string',
		)
	} catch {
		return []
	}
}

export function recordProcess(stateDir: string, entry: RecordedProcess): void {
	const entries = readRegistry(stateDir).filter((existing) => existing.pid !== entry.pid)
	entries.push(entry)
	writeFileSync(registryFile(stateDir), JSON.stringify(entries, null, '\t'))
}

export function forgetProcess(stateDir: string, pid: number): void {
	const file = registryFile(stateDir)
	if (!existsSync(file)) return
	const entries = readRegistry(stateDir).filter((existing) => existing.pid !== pid)
	writeFileSync(file, JSON.stringify(entries, null, '\t'))
}

/** True while `pid` is alive and still runs `executable` (checked through /proc). */
export function stillOurs(entry: RecordedProcess): boolean {
	try {
		const cmdline = readFileSync(`/proc/${entry.pid}/cmdline`, 'utf8')
		const argv0 = cmdline.split('\0')[0] ?? ''
		return argv0 === entry.executable
	} catch {
		return false
	}
}

/** SIGKILLs every recorded process that is still ours, waits for them to go, clears the file. */
export async function killRecorded(stateDir: string): Promise<RecordedProcess[]> {
	const killed: RecordedProcess[] = []
	for (const entry of readRegistry(stateDir)) {
		if (!stillOurs(entry)) continue
		try {
			process.kill(entry.pid, 'SIGCONT')
			process.kill(entry.pid, 'SIGKILL')
			killed.push(entry)
		} catch {
			// already gone
		}
	}
	const deadline = Date.now() + 10_000
	while (killed.some(stillOurs) && Date.now() < deadline) {
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
	if (existsSync(registryFile(stateDir))) writeFileSync(registryFile(stateDir), '[]')
	return killed
}
