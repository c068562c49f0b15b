/**
 * One run of a pod's container: `ip netns exec <pod netns> bwrap … <command>` as a real process,
 * and everything the kubelet does to it — signal its pid 1, freeze and thaw every process in it,
 * run an exec hook inside its namespaces (`nsenter`), SIGKILL it. `ip netns exec` execs bwrap in
 * place, so the spawned pid is bwrap's monitor, and its only child is the container's pid 1
 * (`--as-pid-1`). The environment is exactly the container's: nothing of the host's leaks in.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { descendantPids } from '../../../src/backends/machine/claims/process-tree.js'
import { StderrTail } from '../../../src/backends/machine/launch/stderr-tail.js'
import { exitCodeOf } from './restart-policy.js'

export interface ContainerLaunch {
	readonly netns: string
	readonly bwrapPath: string
	/** bwrap's arguments (from `buildContainerBwrapArgs`). */
	readonly bwrapArgs: readonly string[]
	readonly env: Readonly<Record<string, string>>
	/** Identity for exec hooks entering the container. */
	readonly uid: number
	readonly gid: number
	/** A privileged container's hooks keep its capabilities (a preStop signalling pid 1). */
	readonly privileged?: boolean
	/** Values masked in the log tail. */
	readonly secrets: readonly string[]
}

export interface ContainerExit {
	readonly exitCode: number
	readonly signal: NodeJS.Signals | null
	readonly finishedAt: string
}

export interface HookResult {
	readonly exitCode: number
	readonly output: string
}

const PID1_WAIT_MS = 5_000

function signalQuietly(pid: number | undefined, signal: NodeJS.Signals): void {
	if (pid === undefined) return
	try {
		process.kill(pid, signal)
	} catch {
		// Already gone.
	}
}

async function onlyChild(pid: number): Promise<number | undefined> {
	try {
		const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')
		const first = text.trim().split(' ')[0]
		return first ? Number(first) : undefined
	} catch {
		return undefined
	}
}

export class ContainerProcess {
	readonly containerID = `namzu://${randomBytes(32).toString('hex')}`
	readonly startedAt = new Date().toISOString()
	readonly exited: Promise<ContainerExit>
	readonly #child: ChildProcess
	readonly #launch: ContainerLaunch
	readonly #log = new StderrTail()
	#exit: ContainerExit | undefined
	#pid1: number | undefined

	constructor(launch: ContainerLaunch) {
		this.#launch = launch
		this.#child = spawn(
			'ip',
			['netns', 'exec', launch.netns, launch.bwrapPath, ...launch.bwrapArgs],
			{ env: { ...launch.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
		)
		this.#child.stdout?.on('data', (chunk: Buffer) => this.#log.push(chunk))
		this.#child.stderr?.on('data', (chunk: Buffer) => this.#log.push(chunk))
		this.#child.stdout?.on('error', () => undefined)
		this.#child.stderr?.on('error', () => undefined)
		this.exited = new Promise((resolve) => {
			const done = (code: number | null, signal: NodeJS.Signals | null) => {
				this.#exit ??= {
					exitCode: exitCodeOf(code, signal),
					signal,
					finishedAt: new Date().toISOString(),
				}
				resolve(this.#exit)
			}
			this.#child.once('error', () => {
				if (this.#child.pid === undefined) done(127, null)
			})
			this.#child.once('exit', done)
		})
	}

	get exitStatus(): ContainerExit | undefined {
		return this.#exit
	}

	/** The container's combined stdout/stderr tail, secrets masked (its "logs"). */
	logs(): string {
		return this.#log.read(this.#launch.secrets)
	}

	/** Host pid of the container's pid 1, once bwrap has forked it. */
	async pid1(): Promise<number | undefined> {
		if (this.#pid1 !== undefined) return this.#pid1
		const monitor = this.#child.pid
		if (monitor === undefined) return undefined
		const deadline = Date.now() + PID1_WAIT_MS
		while (this.#exit === undefined && Date.now() < deadline) {
			const pid = await onlyChild(monitor)
			if (pid !== undefined) {
				this.#pid1 = pid
				return pid
			}
			await new Promise((resolve) => setTimeout(resolve, 5))
		}
		return undefined
	}

	/** Sends `signal` to the container's pid 1 (what a runtime's "stop" sends first). */
	async signal(signal: NodeJS.Signals): Promise<void> {
		signalQuietly(await this.pid1(), signal)
	}

	/** Every process inside the container (pid 1 and its descendants). */
	async processes(): Promise<number[]> {
		const pid1 = await this.pid1()
		if (pid1 === undefined) return []
		return [pid1, ...(await descendantPids(pid1))]
	}

	/** SIGSTOPs every process in the container; the returned function SIGCONTs them. */
	async freeze(): Promise<() => Promise<void>> {
		const frozen = await this.processes()
		for (const pid of frozen) signalQuietly(pid, 'SIGSTOP')
		return async () => {
			for (const pid of frozen) signalQuietly(pid, 'SIGCONT')
		}
	}

	/** SIGKILLs pid 1 (the kernel then kills the whole pid namespace) and bwrap; awaits the exit. */
	async kill(): Promise<ContainerExit> {
		if (this.#exit === undefined) {
			const pid1 = this.#pid1 ?? (await onlyChild(this.#child.pid ?? -1))
			signalQuietly(pid1, 'SIGKILL')
			signalQuietly(this.#child.pid, 'SIGKILL')
		}
		return this.exited
	}

	/**
	 * Runs `command` inside the container's namespaces, root and working directory, as the
	 * container's uid/gid with no_new_privs and no capabilities (a privileged container's: its
	 * own), as an exec hook. Bounded by
	 * `timeoutMs`; a hook still running then is killed.
	 */
	async exec(command: readonly string[], timeoutMs: number): Promise<HookResult> {
		const pid1 = await this.pid1()
		if (pid1 === undefined || this.#exit !== undefined) {
			return { exitCode: 126, output: 'container is not running' }
		}
		const { uid, gid } = this.#launch
		const argv = [
			'-t',
			String(pid1),
			'-a',
			'-r',
			'-w',
			'-S',
			String(uid),
			'-G',
			String(gid),
			'--',
			'setpriv',
			'--no-new-privs',
			...(this.#launch.privileged === true ? [] : ['--inh-caps=-all', '--bounding-set=-all']),
			'--',
			...command,
		]
		return new Promise((resolve) => {
			execFile(
				'nsenter',
				argv,
				{ env: { ...this.#launch.env }, timeout: Math.max(1, timeoutMs), killSignal: 'SIGKILL' },
				(error, stdout, stderr) => {
					const code =
						error === null
							? 0
							: typeof error.code === 'number'
								? error.code
								: error.killed
									? 137
									: 1
					resolve({ exitCode: code, output: `${stdout}${stderr}`.slice(-4096) })
				},
			)
		})
	}
}
