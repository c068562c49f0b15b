/**
 * `NAMZU_AGENT_WORKLOAD_CGROUPS` (pure): the inherited descriptors of the cgroup directories a tier
 * hands the agent for its workload, as a JSON array of `{ fd, version, perCommand }`.
 *
 * - `perCommand: false` — a group every workload process joins (e.g. the one carrying `pids.max`);
 * - `perCommand: true` — a directory under which the agent makes one group per command, joined
 *   before the command runs and killed as a whole (v1: the freezer hierarchy; v2: `cgroup.kill`);
 * - `accounting: true` (with `perCommand: false`) — a v1 counting hierarchy (memory, cpuacct)
 *   where each command also gets a group of its own, only to read what it used.
 *
 * Absent or empty, the agent starts commands exactly as it always did: in their own process group.
 */
import { AgentConfigError } from '../handler/config-error.js'
import { describeIntegerRange, isIntegerIn } from '../handler/value-checks.js'

export const WORKLOAD_CGROUPS_VARIABLE = 'NAMZU_AGENT_WORKLOAD_CGROUPS'

export interface WorkloadCgroupDescriptor {
	/** The inherited directory descriptor (re-opened close-on-exec at startup). */
	readonly fd: number
	readonly version: 1 | 2
	readonly perCommand: boolean
	/** Per-command groups only for their counters (v1 memory, cpuacct). */
	readonly accounting?: boolean
}

/** Descriptors 0–2 are stdio: a cgroup directory is never one of them. */
const FD_RANGE = { min: 3 } as const
/** More groups than any tier has hierarchies would only be a mistake. */
const MAX_DESCRIPTORS = 16

function refuse(detail: string): never {
	throw new AgentConfigError(`${WORKLOAD_CGROUPS_VARIABLE} ${detail}`, WORKLOAD_CGROUPS_VARIABLE)
}

function parseEntry(entry: unknown, index: number): WorkloadCgroupDescriptor {
	if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
		refuse(`entry ${index} must be an object {fd, version, perCommand}`)
	}
	const { fd, version, perCommand, accounting } = entry as Record<string, unknown>
	if (!isIntegerIn(fd, FD_RANGE)) {
		refuse(
			`entry ${index}: fd must be ${describeIntegerRange(FD_RANGE)}, got ${JSON.stringify(fd)}`,
		)
	}
	if (version !== 1 && version !== 2) {
		refuse(`entry ${index}: version must be 1 or 2, got ${JSON.stringify(version)}`)
	}
	if (typeof perCommand !== 'boolean') {
		refuse(`entry ${index}: perCommand must be a boolean, got ${JSON.stringify(perCommand)}`)
	}
	if (accounting !== undefined && (typeof accounting !== 'boolean' || (accounting && perCommand))) {
		refuse(`entry ${index}: accounting must be a boolean, and only on a perCommand: false entry`)
	}
	return { fd, version, perCommand, ...(accounting === true ? { accounting } : {}) }
}

/** The descriptors the variable names, in order; `[]` when it is absent or empty. */
export function parseWorkloadCgroups(raw: string | undefined): readonly WorkloadCgroupDescriptor[] {
	if (raw === undefined || raw.trim() === '') return []
	let value: unknown
	try {
		value = JSON.parse(raw)
	} catch {
		refuse(`must be a JSON array, got ${JSON.stringify(raw.slice(0, 200))}`)
	}
	if (!Array.isArray(value)) refuse('must be a JSON array of {fd, version, perCommand}')
	if (value.length > MAX_DESCRIPTORS)
		refuse(`names ${value.length} groups, at most ${MAX_DESCRIPTORS}`)
	const entries = value.map(parseEntry)
	const fds = new Set(entries.map((entry) => entry.fd))
	if (fds.size !== entries.length) refuse('names the same fd twice')
	if (entries.filter((entry) => entry.perCommand).length > 1) {
		// One place to freeze or kill a command's tree; a second would be killed by nobody.
		refuse('names more than one perCommand group')
	}
	return entries
}
