import { spawn } from 'node:child_process'
import type { SandboxExecOptions, SandboxExecResult } from '../../../src/contract/sandbox.js'
import type { SandboxFileWalkExec } from '../../../src/exec-programs/walk/walk-files-via-exec.js'
import { isRunning } from '../../helpers/process-running.js'

export interface HostExecRun {
	readonly pid: number | undefined
	readonly result: Promise<SandboxExecResult>
}

export interface HostExec {
	readonly exec: SandboxFileWalkExec
	/** Every process started, in order. */
	readonly runs: HostExecRun[]
}

/**
 * A real `exec` on the host (child_process.spawn in its own process group), so walk tests run the
 * genuine guest program against real trees. `nodeArgs` are inserted before `-e` (e.g. a preload
 * that slows the walk down). Abort kills the whole group with SIGKILL and reports `aborted: true`.
 */
export function createHostExec(nodeArgs: readonly string[] = []): HostExec {
	const runs: HostExecRun[] = []
	const exec: SandboxFileWalkExec = (command, args = [], options: SandboxExecOptions = {}) => {
		const started = Date.now()
		const argv = command === 'node' ? [...nodeArgs, ...args] : [...args]
		const child = spawn(command === 'node' ? process.execPath : command, argv, {
			detached: true,
			stdio: ['ignore', 'pipe', 'pipe'],
		})
		const result = new Promise<SandboxExecResult>((resolve, reject) => {
			let stdout = ''
			let stderr = ''
			let aborted = false
			const abort = () => {
				aborted = true
				if (child.pid !== undefined) {
					try {
						process.kill(-child.pid, 'SIGKILL')
					} catch {
						// Already gone.
					}
				}
			}
			if (options.signal?.aborted) abort()
			options.signal?.addEventListener('abort', abort, { once: true })
			child.stdout.setEncoding('utf8')
			child.stderr.setEncoding('utf8')
			child.stdout.on('data', (data: string) => {
				stdout += data
				options.onOutput?.({ stream: 'stdout', data })
			})
			child.stderr.on('data', (data: string) => {
				stderr += data
				options.onOutput?.({ stream: 'stderr', data })
			})
			child.on('error', reject)
			child.on('close', (code, signal) => {
				options.signal?.removeEventListener('abort', abort)
				resolve({
					exitCode: aborted ? (code === 0 ? 130 : (code ?? -1)) : (code ?? -1),
					stdout,
					stderr,
					...(signal === null ? {} : { signal }),
					timedOut: false,
					...(aborted ? { aborted: true } : {}),
					durationMs: Date.now() - started,
				})
			})
		})
		runs.push({ pid: child.pid, result })
		return result
	}
	return { exec, runs }
}

/** Whether a process id still names a live process (a zombie counts as ended). */
export const processAlive = isRunning
