/**
 * Finding sandbox cgroups by name, without a record: every `namzu-sbx-<id>` directory at the root
 * of each mounted hierarchy and in this process's own group there (where a sandbox's groups, and an
 * OCI runtime's groups for its container, are made). The reaper uses it to keep a sandbox's locks
 * while any of its groups exists, and to find groups no record owns (a host that died between
 * making a group and recording it, a runtime that made one the record never named).
 */

import { readdir, stat } from 'node:fs/promises'
import { readIfPresent } from '../../../common/read-if-present.js'
import { groupDirectory, parseCgroupHierarchies, parseProcCgroup } from './cgroup-layout.js'

const SANDBOX_GROUP = /^namzu-sbx-([0-9a-f]{12})$/

/** The directories of each hierarchy a sandbox group can be made in: its root and our own group. */
async function parentGroups(): Promise<string[]> {
	const mountinfo = (await readIfPresent('/proc/self/mountinfo')) ?? ''
	const membership = parseProcCgroup((await readIfPresent('/proc/self/cgroup')) ?? '')
	const parents = new Set<string>()
	for (const mount of parseCgroupHierarchies(mountinfo)) {
		parents.add(mount.mountPoint.replace(/\/+$/, '') || '/')
		const path =
			mount.version === 2
				? membership.v2
				: mount.options.map((option) => membership.v1[option]).find((found) => found)
		const own = path === undefined ? undefined : groupDirectory(mount, path)
		if (own !== undefined) parents.add(own)
	}
	return [...parents]
}

/** Every top-level sandbox group on this host, by sandbox id. */
export async function topLevelSandboxCgroups(): Promise<Map<string, string[]>> {
	const found = new Map<string, string[]>()
	for (const parent of await parentGroups()) {
		for (const name of await readdir(parent).catch(() => [])) {
			const id = SANDBOX_GROUP.exec(name)?.[1]
			if (id === undefined) continue
			const dir = `${parent}/${name}`
			if (
				!(await stat(dir).then(
					(info) => info.isDirectory(),
					() => false,
				))
			)
				continue
			found.set(id, [...(found.get(id) ?? []), dir])
		}
	}
	return found
}

/** The groups of sandbox `id` that exist: those recorded, and those found by name. */
export async function existingSandboxCgroups(
	id: string,
	recorded: readonly string[],
): Promise<string[]> {
	const present = new Set<string>()
	for (const dir of recorded) {
		if (
			await stat(dir).then(
				(info) => info.isDirectory(),
				() => false,
			)
		)
			present.add(dir)
	}
	for (const dir of (await topLevelSandboxCgroups()).get(id) ?? []) present.add(dir)
	return [...present]
}

/** Milliseconds since the youngest of `dirs` was made or changed (0 when none can be read). */
export async function youngestAgeMs(dirs: readonly string[], nowMs: number): Promise<number> {
	let youngest: number | undefined
	for (const dir of dirs) {
		const mtimeMs = await stat(dir).then(
			(info) => info.mtimeMs,
			() => undefined,
		)
		if (mtimeMs === undefined) continue
		youngest = youngest === undefined ? mtimeMs : Math.max(youngest, mtimeMs)
	}
	return youngest === undefined ? 0 : Math.max(0, nowMs - youngest)
}
