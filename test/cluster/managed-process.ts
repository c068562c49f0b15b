// One control-plane process (etcd, kube-apiserver, …): started with its output appended to a log
// file in the state directory, its pid recorded for crash cleanup, and stopped with SIGTERM then
// SIGKILL after a grace period. `exited` settles when it ends, for whatever reason.
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { forgetProcess, recordProcess } from './pid-registry.js'

export interface ManagedProcessOptions {
	readonly name: string
	readonly executable: string
	readonly args: readonly string[]
	readonly stateDir: string
	readonly env?: NodeJS.ProcessEnv
	readonly cwd?: string
}

export class ProcessExitedEarlyError extends Error {
	override readonly name = 'ProcessExitedEarlyError'
	readonly reason = 'exited-early'
	readonly retryable = false
	constructor(
		readonly processName: string,
		readonly exitCode: number | null,
		readonly logTail: string,
	) {
		super(`${processName} exited (${exitCode}) before it became ready:\n${logTail}`)
	}
}

export class ManagedProcess {
	readonly logPath: string
	readonly exited: Promise<number | null>
	private readonly child: ChildProcess
	private exitCode: number | null | undefined

	constructor(readonly options: ManagedProcessOptions) {
		this.logPath = join(options.stateDir, 'logs', `${options.name}.log`)
		const log = openSync(this.logPath, 'a')
		try {
			this.child = spawn(options.executable, options.args, {
				cwd: options.cwd ?? options.stateDir,
				env: { ...process.env, ...options.env },
				stdio: ['ignore', log, log],
			})
		} finally {
			closeSync(log)
		}
		const pid = this.child.pid
		if (pid !== undefined) {
			recordProcess(options.stateDir, { pid, executable: options.executable, name: options.name })
		}
		this.exited = new Promise((resolve) => {
			this.child.on('error', () => {
				this.exitCode = null
				resolve(null)
			})
			this.child.on('exit', (code, signal) => {
				this.exitCode = code ?? (signal ? null : 0)
				if (pid !== undefined) forgetProcess(options.stateDir, pid)
				resolve(this.exitCode)
			})
		})
	}

	get name(): string {
		return this.options.name
	}

	get pid(): number | undefined {
		return this.child.pid
	}

	get running(): boolean {
		return this.exitCode === undefined
	}

	logTail(lines = 30): string {
		try {
			return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
		} catch {
			return ''
		}
	}

	/** Throws ProcessExitedEarlyError if the process is no longer running. */
	assertRunning(): void {
		if (!this.running) {
			throw new ProcessExitedEarlyError(this.name, this.exitCode ?? null, this.logTail())
		}
	}

	signal(signal: NodeJS.Signals): void {
		if (this.running) this.child.kill(signal)
	}

	/** True when every thread of the process is in the stopped state (`T` in /proc/…/stat). */
	isStopped(): boolean {
		const pid = this.child.pid
		if (pid === undefined || !this.running) return false
		try {
			const tasks = readdirSync(`/proc/${pid}/task`)
			return tasks.every((task) => {
				const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8')
				return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')
			})
		} catch {
			return false
		}
	}

	/** SIGSTOP, resolving once the kernel reports every thread stopped. */
	async freeze(): Promise<void> {
		this.signal('SIGSTOP')
		while (this.running && !this.isStopped()) await new Promise((r) => setTimeout(r, 5))
	}

	/** SIGCONT, resolving once no thread is stopped any more. */
	async thaw(): Promise<void> {
		this.signal('SIGCONT')
		while (this.running && this.isStopped()) await new Promise((r) => setTimeout(r, 5))
	}

	async stop(graceMs = 5_000): Promise<void> {
		if (!this.running) return
		this.child.kill('SIGCONT')
		this.child.kill('SIGTERM')
		const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs)
		await this.exited
		clearTimeout(timer)
	}
}
