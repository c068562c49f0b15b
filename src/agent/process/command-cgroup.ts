/**
 * One command's own cgroup (`c-<n>` under the per-command directory the tier handed over): what is
 * in it, killing all of it, and removing it once empty. A descendant that called `setsid` or was
 * double-forked has left the command's process group and kernel session but never its cgroup, so
 * this is the unit that "the whole tree" means.
 *
 * Killing converges even against a fork bomb:
 * - v1 (freezer hierarchy): `FROZEN` (nothing forks any more), SIGKILL every pid in
 *   `cgroup.procs`, `THAWED` (the signals are delivered), repeated until `cgroup.procs` is empty;
 * - v2: `1` into `cgroup.kill` (the kernel kills every member, forks in flight included), then wait
 *   for `cgroup.events` to say `populated 0`.
 */
import { readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { pollUntil } from '../../common/poll-until.js'
import { parseFreezerState, parsePopulated, parseProcsList } from './cgroup-files.js'
import { type CommandUsage, readCommandUsage } from './command-usage.js'

/** How long one v1 round waits for `FROZEN` before killing what it sees anyway. */
const FREEZE_WAIT_MS = 50
/** How long one v1 round waits for the killed members to leave before the next round. */
const ROUND_SETTLE_MS = 50

function errorCode(error: unknown): string | undefined {
	if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code
	return undefined
}

export class CommandCgroup {
	/** `c-<n>`. */
	readonly name: string
	/** Its directory, through the agent's close-on-exec descriptor of the per-command directory. */
	readonly path: string
	readonly version: 1 | 2
	/** Its namesakes in the v1 counting hierarchies (memory, cpuacct): read, then removed with it. */
	readonly accountingPaths: readonly string[]
	#killing: Promise<boolean> | undefined
	#removed = false

	constructor(name: string, path: string, version: 1 | 2, accountingPaths: readonly string[] = []) {
		this.name = name
		this.path = path
		this.version = version
		this.accountingPaths = accountingPaths
	}

	/** What the command's tree used so far, from this group and its counting namesakes. */
	usage(): CommandUsage {
		return readCommandUsage([this.path, ...this.accountingPaths])
	}

	get removed(): boolean {
		return this.#removed
	}

	/** Every pid in the group; `[]` once the directory is gone. */
	members(): number[] {
		try {
			return parseProcsList(readFileSync(`${this.path}/cgroup.procs`, 'utf8'))
		} catch (error) {
			if (errorCode(error) === 'ENOENT') return []
			throw error
		}
	}

	isEmpty(): boolean {
		if (this.version === 2) {
			try {
				const populated = parsePopulated(readFileSync(`${this.path}/cgroup.events`, 'utf8'))
				if (populated !== undefined) return !populated
			} catch (error) {
				if (errorCode(error) === 'ENOENT') return true
			}
		}
		return this.members().length === 0
	}

	/**
	 * Kills every process in the group; true once it is empty, false when `timeoutMs` passed first.
	 * Concurrent calls share one run.
	 */
	kill(timeoutMs: number): Promise<boolean> {
		if (this.#removed) return Promise.resolve(true)
		if (!this.#killing) {
			const run = this.version === 2 ? this.#killV2(timeoutMs) : this.#killV1(timeoutMs)
			// A group the agent can no longer write to cannot be confirmed empty.
			this.#killing = run
				.catch(() => this.#emptyOrUnknown())
				.finally(() => {
					this.#killing = undefined
				})
		}
		return this.#killing
	}

	#emptyOrUnknown(): boolean {
		try {
			return this.isEmpty()
		} catch {
			return false
		}
	}

	/** rmdir once empty; true when the group is gone (now or before), false while it is busy. */
	remove(): boolean {
		if (this.#removed) return true
		try {
			rmdirSync(this.path)
		} catch (error) {
			const code = errorCode(error)
			if (code !== 'ENOENT') {
				if (code === 'EBUSY' || code === 'ENOTEMPTY') return false
				throw error
			}
		}
		// Empty here means empty everywhere: a process is in every hierarchy at once.
		for (const path of this.accountingPaths) {
			try {
				rmdirSync(path)
			} catch {
				// Gone already, or held a moment longer by the kernel: nothing runs in it.
			}
		}
		this.#removed = true
		return true
	}

	async #killV2(timeoutMs: number): Promise<boolean> {
		const deadline = performance.now() + timeoutMs
		try {
			writeFileSync(`${this.path}/cgroup.kill`, '1')
		} catch (error) {
			if (errorCode(error) === 'ENOENT') return true
			throw error
		}
		return this.#waitEmpty(deadline)
	}

	async #killV1(timeoutMs: number): Promise<boolean> {
		const deadline = performance.now() + timeoutMs
		try {
			for (;;) {
				if (!this.#writeFreezer('FROZEN')) return true
				await this.#waitFrozen(Math.min(deadline, performance.now() + FREEZE_WAIT_MS))
				const members = this.members()
				if (members.length === 0) return true
				for (const pid of members) sendSignal(pid, 'SIGKILL')
				// A frozen task takes its SIGKILL only once thawed.
				this.#writeFreezer('THAWED')
				if (await this.#waitEmpty(Math.min(deadline, performance.now() + ROUND_SETTLE_MS))) {
					return true
				}
				if (performance.now() >= deadline) return false
			}
		} finally {
			// Never leave a group frozen: whatever is still in it must be able to die.
			try {
				this.#writeFreezer('THAWED')
			} catch {
				// Reported through the members still listed.
			}
		}
	}

	/** false when the group's directory is gone. */
	#writeFreezer(state: 'FROZEN' | 'THAWED'): boolean {
		try {
			writeFileSync(`${this.path}/freezer.state`, state)
			return true
		} catch (error) {
			if (errorCode(error) === 'ENOENT') return false
			throw error
		}
	}

	async #waitFrozen(untilAt: number): Promise<void> {
		await pollUntil(() => {
			try {
				return parseFreezerState(readFileSync(`${this.path}/freezer.state`, 'utf8')) !== 'FREEZING'
			} catch {
				return true
			}
		}, untilAt)
	}

	#waitEmpty(untilAt: number): Promise<boolean> {
		return pollUntil(() => this.isEmpty(), untilAt)
	}
}

/** false when the process is already gone. */
function sendSignal(pid: number, signal: NodeJS.Signals): boolean {
	try {
		process.kill(pid, signal)
		return true
	} catch {
		return false
	}
}
