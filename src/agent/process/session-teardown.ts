/**
 * The end of a program that owns a kernel session (a terminal's shell under `script`, a detached
 * session's program), once: SIGKILL for everything still in that session, for the spawned
 * process's own group, and — with workload cgroups — for its whole cgroup, which also holds what
 * left both (a `setsid` job). `run` signals at once; `finished` settles when the cgroup is empty or
 * its kill gave up.
 */
import type { ChildProcess } from 'node:child_process'
import { killSession } from './process-tree.js'
import type { CommandTree } from './workload-spawn.js'

/** SIGKILL for a program's kernel session, its process group and its cgroup, once. */
export class SessionTeardown {
	session: number | undefined
	#done = false
	readonly #child: ChildProcess
	readonly #tree: CommandTree
	readonly #treeKillMs: number
	#finished: Promise<void> = Promise.resolve()

	constructor(child: ChildProcess, tree: CommandTree, treeKillMs: number) {
		this.#child = child
		this.#tree = tree
		this.#treeKillMs = treeKillMs
	}

	/** Settles once the last `run` is done with the cgroup: empty, or its kill gave up. */
	get finished(): Promise<void> {
		return this.#finished
	}

	/** Every pid in the program's cgroup (`[]` without one). */
	treeMembers(): number[] {
		return this.#tree.members()
	}

	/** Returns how many processes were signalled now (0 on a repeat); the cgroup follows. */
	run(): number {
		if (this.#done) return 0
		this.#done = true
		let signalled = this.session === undefined ? 0 : killSession(this.session)
		const pid = this.#child.pid
		if (pid !== undefined) {
			try {
				// Detached, so the program leads its own group.
				process.kill(-pid, 'SIGKILL')
				signalled++
			} catch {
				// Already gone.
			}
		}
		if (this.#tree.grouped) {
			signalled += this.#tree.members().length
			this.#finished = this.#tree.kill(this.#treeKillMs).then(() => undefined)
		}
		return signalled
	}
}
