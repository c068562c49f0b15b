/**
 * bwrap's side of a sandbox's network: the descriptors of the allow-all plumbing and the info JSON
 * it reports the sandbox's pid in. bwrap reports the sandbox's pid on `--info-fd` and holds
 * `--sync-fd` open for as long as the sandbox runs; that descriptor's other end is slirp4netns's
 * `--exit-fd`, so slirp4netns exits with the sandbox whoever ends it (teardown, a crashed host, a
 * kept-alive sandbox's watchdog). Pure.
 */

/**
 * Descriptor numbers (in bwrap) of the allow-all plumbing, placed after `firstFd - 1`: bwrap's
 * own, which never reach the agent.
 */
export interface AllowAllFds {
	readonly infoFd: number
	readonly syncFd: number
}

export function allowAllFds(firstFd: number): AllowAllFds {
	return { infoFd: firstFd, syncFd: firstFd + 1 }
}

/** bwrap arguments of the allow-all plumbing: where it reports the pid, what it holds open. */
export function allowAllBwrapArgs(fds: AllowAllFds): string[] {
	return ['--info-fd', String(fds.infoFd), '--sync-fd', String(fds.syncFd)]
}

/** Parses bwrap's `--info-fd` JSON; undefined until a complete object with a child pid arrived. */
export function parseBwrapInfo(text: string): number | undefined {
	let parsed: unknown
	try {
		parsed = JSON.parse(text)
	} catch {
		return undefined
	}
	if (typeof parsed !== 'object' || parsed === null) return undefined
	const pid: unknown = (parsed as Record<string, unknown>)['child-pid']
	return typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}
