/**
 * The cgroup interface files a command's group is read through (pure parsers): `cgroup.procs`
 * (one pid per line, zombies already gone), v2 `cgroup.events` (`populated 0|1`), and the v1
 * freezer's `freezer.state` (`THAWED`, `FREEZING`, `FROZEN`).
 */

/** Pids listed in a `cgroup.procs` text; anything that is not a positive integer is skipped. */
export function parseProcsList(text: string): number[] {
	const pids: number[] = []
	for (const line of text.split('\n')) {
		const trimmed = line.trim()
		if (!/^\d+$/.test(trimmed)) continue
		const pid = Number(trimmed)
		if (Number.isSafeInteger(pid) && pid > 0) pids.push(pid)
	}
	return pids
}

/** `populated` of a v2 `cgroup.events` text; undefined when the key is missing or malformed. */
export function parsePopulated(eventsText: string): boolean | undefined {
	const match = /^populated (0|1)$/m.exec(eventsText)
	if (!match) return undefined
	return match[1] === '1'
}

export type FreezerState = 'THAWED' | 'FREEZING' | 'FROZEN'

export function parseFreezerState(text: string): FreezerState | undefined {
	const state = text.trim()
	return state === 'THAWED' || state === 'FREEZING' || state === 'FROZEN' ? state : undefined
}

/** The name of the `n`th per-command group. */
export function commandGroupName(n: number): string {
	return `c-${n}`
}

/** `n` of a per-command group's directory name, or undefined for any other entry. */
export function commandGroupNumber(name: string): number | undefined {
	const match = /^c-([1-9]\d{0,14})$/.exec(name)
	return match?.[1] === undefined ? undefined : Number(match[1])
}
