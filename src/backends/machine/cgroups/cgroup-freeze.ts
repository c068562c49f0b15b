/**
 * Pausing a sandbox's workload for an instant (a checkpoint's capture): v1 `freezer.state`
 * (`FROZEN` until it reads back `FROZEN`) or v2 `cgroup.freeze` (until `cgroup.events` says
 * `frozen 1`), on the sandbox's groups that have one. On v1 the agent is not in the freezer group
 * (`workload-cgroups.ts`), so it keeps serving; on v2 the `work/` group is frozen when it exists.
 */
import { access, readFile, writeFile } from 'node:fs/promises'
import { pollUntil } from '../../../common/poll-until.js'

/** How long a freeze may take to settle before the capture goes on unfrozen. */
const FREEZE_SETTLE_MS = 2_000

async function exists(path: string): Promise<boolean> {
	return access(path).then(
		() => true,
		() => false,
	)
}

async function readText(path: string): Promise<string> {
	return readFile(path, 'utf8').catch(() => '')
}

interface Freezable {
	readonly file: string
	readonly frozen: string
	readonly thawed: string
	settled(): Promise<boolean>
}

async function freezableOf(dir: string): Promise<Freezable | undefined> {
	if (await exists(`${dir}/freezer.state`)) {
		const file = `${dir}/freezer.state`
		return {
			file,
			frozen: 'FROZEN',
			thawed: 'THAWED',
			settled: async () => (await readText(file)).trim() === 'FROZEN',
		}
	}
	const group = (await exists(`${dir}/work/cgroup.freeze`)) ? `${dir}/work` : dir
	if (!(await exists(`${group}/cgroup.freeze`))) return undefined
	return {
		file: `${group}/cgroup.freeze`,
		frozen: '1',
		thawed: '0',
		settled: async () => /^frozen 1$/m.test(await readText(`${group}/cgroup.events`)),
	}
}

/**
 * Freezes what of `dirs` can be frozen and answers the thaw (idempotent, never throws). Whether a
 * group settled is not waited past `FREEZE_SETTLE_MS`: a thaw follows in every case.
 */
export async function freezeSandboxGroups(dirs: readonly string[]): Promise<() => Promise<void>> {
	const frozen: Freezable[] = []
	let thawed = false
	const thaw = async () => {
		if (thawed) return
		thawed = true
		for (const group of frozen) await writeFile(group.file, group.thawed).catch(() => undefined)
	}
	try {
		for (const dir of dirs) {
			const group = await freezableOf(dir)
			if (!group) continue
			frozen.push(group)
			await writeFile(group.file, group.frozen)
		}
		const deadline = performance.now() + FREEZE_SETTLE_MS
		for (const group of frozen) await pollUntil(() => group.settled(), deadline)
	} catch (error) {
		await thaw()
		throw error
	}
	return thaw
}
