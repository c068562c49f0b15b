/**
 * The workload cgroups a tier handed the agent (`NAMZU_AGENT_WORKLOAD_CGROUPS`), process-wide: the
 * directory descriptors re-opened close-on-exec (the inherited originals closed, so no workload
 * process ever inherits them), one `c-<n>` group per command under the per-command directory, and
 * the groups whose owner is done, removed once they are empty.
 *
 * A command that exits normally keeps its background descendants (a server started with `&` goes
 * on serving), so its group outlives it; such groups are reaped lazily — at the next command and
 * in a low-frequency sweep that runs only while some are waiting — and never leak.
 */
import { closeSync, constants, mkdirSync, openSync, readdirSync, writeFile } from 'node:fs'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { AgentConfigError } from '../handler/config-error.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { commandGroupName, commandGroupNumber } from './cgroup-files.js'
import { CommandCgroup } from './command-cgroup.js'
import {
	WORKLOAD_CGROUPS_VARIABLE,
	type WorkloadCgroupDescriptor,
} from './workload-cgroup-config.js'

/** Refusal code: the command's group could not be made or opened, so the command did not run. */
export const WORKLOAD_CGROUP_UNAVAILABLE = AGENT_REFUSAL.workload_cgroup_unavailable

/** How often groups that outlived their command are checked for emptiness. */
export const WORKLOAD_CGROUP_SWEEP_MS = 10_000
/** Names tried past ones that already exist before giving up. */
const MAX_NAME_ATTEMPTS = 1000

/** What a child is handed to join its groups before it runs. */
export interface CommandJoin {
	/** The command's own group; undefined when no per-command directory was configured. */
	readonly group: CommandCgroup | undefined
	/** Write descriptors of `cgroup.procs`, the command's own group first. */
	readonly procsFds: readonly number[]
	/** Closes the agent's copies once the child holds its own. */
	close(): void
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error)
}

/** A close-on-exec descriptor of the same directory as the inherited `fd`; closes the original. */
function reopenDirectory(fd: number): number {
	let reopened: number
	try {
		// Node opens every file close-on-exec.
		reopened = openSync(`/proc/self/fd/${fd}`, constants.O_RDONLY | constants.O_DIRECTORY)
	} catch (error) {
		throw new AgentConfigError(
			`${WORKLOAD_CGROUPS_VARIABLE}: fd ${fd} is not an open directory (${describe(error)})`,
			WORKLOAD_CGROUPS_VARIABLE,
		)
	}
	closeSync(fd)
	return reopened
}

/** A counting group left by an earlier agent under the same name is reused. */
function mkdirIfAbsent(path: string): void {
	try {
		mkdirSync(path)
	} catch (error) {
		if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error
	}
}

function directoryPath(fd: number): string {
	return `/proc/self/fd/${fd}`
}

export class WorkloadCgroups {
	readonly #joinDirs: readonly string[]
	readonly #perCommand: { readonly dir: string; readonly version: 1 | 2 } | undefined
	/** Whether results carry what each command used (`NAMZU_AGENT_EXEC_ACCOUNTING`). */
	readonly accounting: boolean
	/** v1 counting hierarchies' per-command directories (memory, cpuacct). */
	readonly #accountingDirs: readonly string[]
	/** Every group not yet removed: running commands' and those waiting to empty. */
	readonly #groups = new Set<CommandCgroup>()
	/** Groups whose owner is done, removed once empty. */
	readonly #retired = new Set<CommandCgroup>()
	#next = 1
	#sweep: NodeJS.Timeout | undefined

	/** Re-opens the descriptors; undefined when none were configured (the agent runs as before). */
	static open(
		descriptors: readonly WorkloadCgroupDescriptor[],
		accounting = true,
	): WorkloadCgroups | undefined {
		if (descriptors.length === 0) return undefined
		const opened = descriptors.map((entry) => ({ ...entry, fd: reopenDirectory(entry.fd) }))
		const perCommand = opened.find((entry) => entry.perCommand)
		return new WorkloadCgroups(
			opened
				.filter((entry) => !entry.perCommand && !entry.accounting)
				.map((entry) => directoryPath(entry.fd)),
			perCommand ? { dir: directoryPath(perCommand.fd), version: perCommand.version } : undefined,
			// Counting groups only beside a group of its own to count for.
			perCommand && accounting
				? opened.filter((entry) => entry.accounting).map((entry) => directoryPath(entry.fd))
				: [],
			accounting,
		)
	}

	private constructor(
		joinDirs: readonly string[],
		perCommand: { readonly dir: string; readonly version: 1 | 2 } | undefined,
		accountingDirs: readonly string[],
		accounting: boolean,
	) {
		this.accounting = accounting
		this.#joinDirs = joinDirs
		this.#perCommand = perCommand
		this.#accountingDirs = accountingDirs
		this.#adoptExisting()
	}

	/** Whether each command gets a group of its own (and so can be killed as a whole). */
	get perCommand(): boolean {
		return this.#perCommand !== undefined
	}

	/** Groups not yet removed (running commands' and those waiting to empty). */
	get groupCount(): number {
		return this.#groups.size
	}

	/**
	 * Makes the next command's group and opens every `cgroup.procs` it joins. Refuses with
	 * `workload_cgroup_unavailable`; nothing is left behind then.
	 */
	prepare(): CommandJoin {
		this.reap()
		const fds: number[] = []
		let group: CommandCgroup | undefined
		try {
			if (this.#perCommand) {
				group = this.#makeGroup(this.#perCommand.dir, this.#perCommand.version)
				fds.push(openSync(`${group.path}/cgroup.procs`, constants.O_WRONLY))
				for (const path of group.accountingPaths) {
					mkdirIfAbsent(path)
					fds.push(openSync(`${path}/cgroup.procs`, constants.O_WRONLY))
				}
			}
			for (const dir of this.#joinDirs)
				fds.push(openSync(`${dir}/cgroup.procs`, constants.O_WRONLY))
		} catch (error) {
			for (const fd of fds) closeSync(fd)
			try {
				if (group) group.remove()
			} catch {
				// An empty group the agent cannot remove holds nothing; the refusal says why.
			}
			throw new OpRefusal(
				WORKLOAD_CGROUP_UNAVAILABLE,
				formatRefusal(WORKLOAD_CGROUP_UNAVAILABLE, describe(error)),
			)
		}
		if (group) this.#groups.add(group)
		let closed = false
		return {
			group,
			procsFds: fds,
			close: () => {
				if (closed) return
				closed = true
				for (const fd of fds) closeSync(fd)
			},
		}
	}

	/**
	 * Writes `pid`, a workload process that joined every group, into a group every workload process
	 * joins (v1: the pids `work/`), on the thread pool: nothing moves, but the kernel's migration
	 * lock, cold after a quiet spell (an RCU grace period of 5–20 ms at its next use), starts warming
	 * now, so the next join — the spare refilled right after a command it served — finds it warm.
	 * Even a pid reused meanwhile names a workload process already there. None without such a
	 * group (v2 only: a workload process's one group is its command's).
	 */
	warmMigration(pid: number): void {
		const shared = this.#joinDirs[0]
		if (shared !== undefined) writeFile(`${shared}/cgroup.procs`, String(pid), () => undefined)
	}

	/** The owner of `group` is done with it: removed now if empty, else once it is. */
	retire(group: CommandCgroup): void {
		if (this.#forgetIfRemoved(group)) return
		this.#retired.add(group)
		this.#armSweep()
	}

	/** Removes every retired group that has become empty. */
	reap(): void {
		for (const group of [...this.#retired]) {
			try {
				if (this.#forgetIfRemoved(group)) this.#retired.delete(group)
			} catch {
				// Left for the next sweep.
			}
		}
		if (this.#retired.size === 0 && this.#sweep) {
			clearInterval(this.#sweep)
			this.#sweep = undefined
		}
	}

	/** Every pid in every group the agent holds (for a quiesce). */
	memberPids(): number[] {
		return [...this.#groups].flatMap((group) => {
			try {
				return group.members()
			} catch {
				return []
			}
		})
	}

	/** Kills every group, running commands' included (agent shutdown); true when all are empty. */
	async killAll(timeoutMs: number): Promise<boolean> {
		const groups = [...this.#groups]
		const results = await Promise.all(groups.map((group) => group.kill(timeoutMs)))
		for (const group of groups) this.retire(group)
		return results.every(Boolean)
	}

	#forgetIfRemoved(group: CommandCgroup): boolean {
		if (!group.remove()) return false
		this.#groups.delete(group)
		this.#retired.delete(group)
		return true
	}

	#makeGroup(dir: string, version: 1 | 2): CommandCgroup {
		for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++) {
			const name = commandGroupName(this.#next++)
			const path = `${dir}/${name}`
			try {
				mkdirSync(path)
				return new CommandCgroup(name, path, version, this.#accountingPathsOf(name))
			} catch (error) {
				if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error
			}
		}
		throw new Error(`no free group name after ${MAX_NAME_ATTEMPTS} attempts`)
	}

	/** Groups left by an earlier agent in the same sandbox: owned now, reaped once empty. */
	#adoptExisting(): void {
		const perCommand = this.#perCommand
		if (!perCommand) return
		let names: string[]
		try {
			names = readdirSync(perCommand.dir)
		} catch {
			return
		}
		for (const name of names) {
			const n = commandGroupNumber(name)
			if (n === undefined) continue
			this.#next = Math.max(this.#next, n + 1)
			const group = new CommandCgroup(
				name,
				`${perCommand.dir}/${name}`,
				perCommand.version,
				this.#accountingPathsOf(name),
			)
			this.#groups.add(group)
			this.#retired.add(group)
		}
		this.reap()
		if (this.#retired.size > 0) this.#armSweep()
	}

	#accountingPathsOf(name: string): string[] {
		return this.#accountingDirs.map((dir) => `${dir}/${name}`)
	}

	#armSweep(): void {
		if (this.#sweep) return
		this.#sweep = setInterval(() => this.reap(), WORKLOAD_CGROUP_SWEEP_MS)
		this.#sweep.unref()
	}
}
