/**
 * The cgroup directories an OCI runtime makes for a container whose `cgroupsPath` is relative:
 * one per mounted hierarchy, nested under the runtime process's own group there. The runtime is
 * started inside the sandbox's groups where the sandbox has one (so the container lands inside
 * the sandbox's limits), and at the host process's group in every other hierarchy (devices,
 * blkio, `name=systemd`, …). Named before the runtime runs, so the host-claims record covers a
 * host that dies mid-create. Pure.
 */
import { groupDirectory, parseCgroupHierarchies } from '../machine/cgroups/cgroup-layout.js'

/** `/proc/<pid>/cgroup` lines as (keys, path); v2's line has no keys. */
function parseMembership(text: string): { keys: string[]; path: string; version: 1 | 2 }[] {
	const lines: { keys: string[]; path: string; version: 1 | 2 }[] = []
	for (const line of text.split('\n')) {
		const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim())
		if (!match) continue
		const [, id, keys = '', path = '/'] = match
		if (id === '0' && keys === '') lines.push({ keys: [], path, version: 2 })
		else lines.push({ keys: keys.split(','), path, version: 1 })
	}
	return lines
}

export interface RuntimeCgroupInput {
	/** `/proc/self/mountinfo` of the host process. */
	readonly mountinfo: string
	/** `/proc/self/cgroup` of the host process. */
	readonly membership: string
	/** The sandbox groups the runtime is started in (`<sandbox>/` per joined hierarchy). */
	readonly joinedDirs: readonly string[]
	/** The container's relative `cgroupsPath`. */
	readonly name: string
}

function within(dir: string, mountPoint: string): boolean {
	const base = mountPoint.replace(/\/+$/, '')
	return dir === base || dir.startsWith(`${base}/`)
}

export function runtimeCgroupDirs(input: RuntimeCgroupInput): string[] {
	const membership = parseMembership(input.membership)
	const dirs: string[] = []
	for (const mount of parseCgroupHierarchies(input.mountinfo)) {
		const joined = input.joinedDirs.find((dir) => within(dir, mount.mountPoint))
		if (joined !== undefined) {
			dirs.push(`${joined}/${input.name}`)
			continue
		}
		const line = membership.find(
			(entry) =>
				entry.version === mount.version &&
				(mount.version === 2 || entry.keys.some((key) => mount.options.includes(key))),
		)
		if (line === undefined) continue
		const own = groupDirectory(mount, line.path)
		if (own !== undefined) dirs.push(`${own}/${input.name}`)
	}
	return [...new Set(dirs)]
}
